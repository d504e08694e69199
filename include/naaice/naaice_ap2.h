/* SPDX-License-Identifier: BSD-3-Clause */
/* The reference middleware installs its header under include/naaice/; programs that include
 * it by that path get libnaa's (see naaice_ap2(3)). */
#include "../naaice_ap2.h"
