// SPDX-License-Identifier: BSD-3-Clause
// The profiling interface (pnaa(3)), as MPI's PMPI: each public call is defined under its p-name
// and its public name is a weak alias of it, so that a tool's own naa_invoke (linked into the
// program or LD_PRELOADed) wins and reaches the library through pnaa_invoke. Use after the
// p-name's definition, in the same translation unit (an alias needs its target there).
#pragma once

#define NAA_PROFILED(name) extern "C" decltype(p##name) name __attribute__((weak, alias("p" #name)))
