! SPDX-License-Identifier: BSD-3-Clause
! vecadd.f90: the Fortran twin of vecadd.c - offload c = a + b on 1,000,000 doubles to an
! NAA, twice, through the naa module (fortran/naa.f90).
!
! b is single-send: it travels with the first invocation only and the NAA keeps it, so the
! second invocation sends just the new a. The first invocation is completed with a naa_test
! loop that does other work meanwhile, the second with naa_wait.
!
! Run against a software NAA:
!   naa-server --port 12345 &
!   NAA_SPEC=127.0.0.1:12345:10:2 ./vecadd_f [N]
program vecadd_f
  use, intrinsic :: iso_c_binding, only: c_bool, c_double, c_int, c_int32_t, c_loc, c_size_t, &
                                         c_sizeof
  use, intrinsic :: iso_fortran_env, only: error_unit, int64, output_unit
  use naa
  implicit none

  integer(c_int32_t), parameter :: FN_VECADD_F64 = 10 ! naa-server's built-in vecadd_f64 kernel
  real(c_double), allocatable, target :: a(:), b(:), c(:)
  real(c_double), allocatable :: b_sent(:)
  type(naa_param_t) :: inputs(2), outputs(1)
  type(naa_handle) :: handle ! default-initialised to NAA_HANDLE_NULL
  type(naa_status) :: status
  logical(c_bool) :: done
  integer(c_size_t) :: n, i, bad1, bad2, bytes
  integer(int64) :: polls, t0
  real(c_double) :: t_create, t_round1, t_round2, local_work
  character(len=32) :: arg
  integer :: ios
  logical :: failed

  n = 1000000
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *, iostat=ios) n
    if (ios /= 0 .or. n <= 0) then
      write (error_unit, '(a)') 'usage: vecadd_f [N > 0]'
      stop 2
    end if
  end if
  allocate (a(n), b(n), c(n), b_sent(n), stat=ios)
  if (ios /= 0) then
    write (error_unit, '(a)') 'vecadd_f: out of memory'
    stop 1
  end if
  do i = 1, n
    a(i) = real(i - 1, c_double)
    b(i) = 2.0_c_double * real(i - 1, c_double)
    c(i) = -1.0_c_double
  end do

  bytes = n * c_sizeof(0.0_c_double)
  inputs(1) = naa_param_t(c_loc(a), bytes, .false._c_bool)
  inputs(2) = naa_param_t(c_loc(b), bytes, .true._c_bool)
  outputs(1) = naa_param_t(c_loc(c), bytes, .false._c_bool)
  failed = .false.

  t0 = now_ticks()
  call check('naa_create', naa_create(FN_VECADD_F64, inputs, 2_c_size_t, outputs, 1_c_size_t, handle))
  t_create = elapsed_ms(t0)

  ! Round 1: poll with naa_test and do other work while the NAA computes.
  t0 = now_ticks()
  call check('naa_invoke', naa_invoke(handle))
  done = .false.
  polls = 0
  local_work = 0
  do while (.not. done)
    do i = 0, 999
      local_work = local_work + real(i, c_double) * 1e-9_c_double ! "other work"
    end do
    call check('naa_test', naa_test(handle, done, status))
    polls = polls + 1
  end do
  t_round1 = elapsed_ms(t0)
  bad1 = count_wrong(a, b, c, 1)

  ! Round 2: new a; b stays on the NAA (single-send). Changing the host copy of b shows it.
  do i = 1, n
    a(i) = 0.5_c_double * real(i - 1, c_double)
    c(i) = -1.0_c_double
  end do
  b_sent = b
  b = -7.0_c_double ! never sent: the NAA must still use the b of round 1
  t0 = now_ticks()
  call check('naa_invoke', naa_invoke(handle))
  call check('naa_wait', naa_wait(handle, status))
  t_round2 = elapsed_ms(t0)
  bad2 = count_wrong(a, b_sent, c, 2)

  if (naa_finalize(handle) /= NAA_SUCCESS) failed = .true.
  if (bad1 /= 0 .or. bad2 /= 0) then
    write (output_unit, '(a,i0,a,i0,a,i0,a)') 'vecadd_f: FAILED: ', bad1, ' wrong elements in round 1, ', &
      bad2, ' in round 2 (of ', n, ')'
    failed = .true.
  else
    write (output_unit, '(a,i0,a,i0,a,i0,a,f0.1,a,z2.2,a)') 'vecadd_f: ', n, &
      ' doubles, 2 invocations: all ', 2 * n, ' elements correct (c(', n, ') = ', c(n), &
      ', NAA return code 0x', iand(int(status%naa_return_code), 255), ')'
    write (output_unit, '(a,f0.2,a,i0,a,f0.2,a,f0.2,a)') 'vecadd_f: create ', t_create, &
      ' ms, round 1 (naa_test, ', polls, ' polls) ', t_round1, ' ms, round 2 (naa_wait) ', t_round2, ' ms'
  end if
  deallocate (a, b, c, b_sent)  ! the main program's allocatables are never freed implicitly
  if (failed) stop 1

contains

  ! Stops the program with the library's message unless rc is NAA_SUCCESS.
  subroutine check(what, rc)
    character(len=*), intent(in) :: what
    integer(c_int), intent(in) :: rc

    if (rc /= NAA_SUCCESS) then
      write (error_unit, '(a,a,a,a,a,i0,a)') 'vecadd_f: ', what, ' failed: ', naa_strerror_f(rc), ' (', rc, ')'
      stop 1
    end if
  end subroutine check

  ! Number of elements where z /= x + y; prints the first few.
  function count_wrong(x, y, z, round) result(bad)
    real(c_double), intent(in) :: x(:), y(:), z(:)
    integer, intent(in) :: round
    integer(c_size_t) :: bad, j

    bad = 0
    do j = 1, size(z, kind=c_size_t)
      if (z(j) /= x(j) + y(j)) then
        if (bad < 5) write (error_unit, '(a,i0,a,i0,a,g0,a,g0)') 'vecadd_f: round ', round, ': c(', j, ') = ', &
          z(j), ', expected ', x(j) + y(j)
        bad = bad + 1
      end if
    end do
  end function count_wrong

  function now_ticks() result(ticks)
    integer(int64) :: ticks

    call system_clock(ticks)
  end function now_ticks

  function elapsed_ms(since) result(ms)
    integer(int64), intent(in) :: since
    real(c_double) :: ms
    integer(int64) :: now, rate

    call system_clock(now, rate)
    ms = real(now - since, c_double) * 1000.0_c_double / real(rate, c_double)
  end function elapsed_ms
end program vecadd_f
