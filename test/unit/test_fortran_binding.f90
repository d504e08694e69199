! SPDX-License-Identifier: BSD-3-Clause
! The Fortran binding (fortran/naa.f90) against the C ABI (include/naa.h), no NAA needed:
!  - every bind(C) type has the C struct's size, field offsets and array stride, as the C
!    compiler reports them (fortran_layout.c);
!  - every error-code, return-code and version constant has the C value;
!  - the string wrappers return the library's strings;
!  - the five calls reach the library with their arguments intact: by-value function code and
!    counts, the parameter arrays, the handle, the c_bool flag;
!  - naa_stats_get, naa_handle_info and naa_set_log_handler (a Fortran handler gets the lines).

! The log handler test_fortran_binding installs: counts the lines in the integer arg points to
! and keeps the last line and its level.
module log_sink
  use, intrinsic :: iso_c_binding, only: c_int, c_ptr, c_f_pointer
  use naa, only: naa_string_f
  implicit none
  integer(c_int) :: last_level = -1
  character(len=512) :: last_line = ''
contains
  subroutine sink(level, line, arg) bind(C)
    integer(c_int), value :: level
    type(c_ptr), value :: line, arg
    integer(c_int), pointer :: lines

    call c_f_pointer(arg, lines)
    lines = lines + 1
    last_level = level
    last_line = naa_string_f(line)
  end subroutine sink

  ! Where part starts in text (the program's variable named index hides the intrinsic there).
  function index_of(text, part) result(at)
    character(len=*), intent(in) :: text, part
    integer :: at

    at = index(text, part)
  end function index_of
end module log_sink

program test_fortran_binding
  use, intrinsic :: iso_c_binding, only: c_bool, c_char, c_double, c_int, c_int32_t, c_intptr_t, &
                                         c_loc, c_null_char, c_ptr, c_size_t, c_sizeof, c_funloc, &
                                         c_null_funptr, c_null_ptr
  use, intrinsic :: iso_fortran_env, only: output_unit
  use naa
  use log_sink, only: sink, last_level, last_line, index_of
  implicit none

  integer, parameter :: N_LAYOUT = 59, N_CONSTANTS = 31 ! as in fortran_layout.c

  interface
    subroutine naa_test_c_layout(out) bind(C, name='naa_test_c_layout')
      import :: c_size_t
      integer(c_size_t), intent(out) :: out(*)
    end subroutine naa_test_c_layout
    subroutine naa_test_c_constants(out) bind(C, name='naa_test_c_constants')
      import :: c_int
      integer(c_int), intent(out) :: out(*)
    end subroutine naa_test_c_constants
    function naa_test_c_setenv(name, value) bind(C, name='naa_test_c_setenv') result(rc)
      import :: c_char, c_int
      character(kind=c_char), intent(in) :: name(*), value(*)
      integer(c_int) :: rc
    end function naa_test_c_setenv
    function naa_test_c_unused_port() bind(C, name='naa_test_c_unused_port') result(port)
      import :: c_int
      integer(c_int) :: port
    end function naa_test_c_unused_port
  end interface

  character(len=*), parameter :: layout_names(N_LAYOUT) = [character(len=52) :: &
    'sizeof(naa_param_t)', 'offsetof(naa_param_t, addr)', 'offsetof(naa_param_t, size)', &
    'offsetof(naa_param_t, single_send)', 'stride of naa_param_t[]', 'sizeof(naa_handle)', &
    'offsetof(naa_handle, id)', 'sizeof(naa_status)', 'offsetof(naa_status, naa_return_code)', &
    'offsetof(naa_status, immediate)', 'offsetof(naa_status, bytes_received)', &
    'offsetof(naa_status, function_code)', 'offsetof(naa_status, error)', 'sizeof(naa_attr_t)', &
    'offsetof(naa_attr_t, size)', 'offsetof(naa_attr_t, version)', 'offsetof(naa_attr_t, naa)', &
    'offsetof(naa_attr_t, transport)', 'offsetof(naa_attr_t, timeout_ms)', &
    'offsetof(naa_attr_t, progress)', 'offsetof(naa_attr_t, auth_key)', &
    'offsetof(naa_attr_t, local_ip)', 'offsetof(naa_attr_t, device)', 'offsetof(naa_attr_t, pacing_us)', &
    'offsetof(naa_attr_t, params)', 'offsetof(naa_attr_t, connect_timeout_ms)', &
    'offsetof(naa_attr_t, reconnect)', 'sizeof(naa_stats_function_t)', &
    'offsetof(naa_stats_function_t, naa)', 'offsetof(naa_stats_function_t, invocations)', &
    'offsetof(naa_stats_function_t, invoke_s)', 'offsetof(naa_stats_function_t, served)', &
    'offsetof(naa_stats_function_t, transfer_s)', 'offsetof(naa_stats_function_t, service_s)', &
    'stride of naa_stats_function_t[]', 'sizeof(naa_stats_t)', 'offsetof(naa_stats_t, errors)', &
    'offsetof(naa_stats_t, n_functions)', 'sizeof(naa_stats_energy_function_t)', &
    'offsetof(naa_stats_energy_function_t, naa)', 'offsetof(naa_stats_energy_function_t, windows)', &
    'offsetof(naa_stats_energy_function_t, window_s)', 'offsetof(naa_stats_energy_function_t, host_j)', &
    'offsetof(naa_stats_energy_function_t, bytes)', 'offsetof(naa_stats_energy_function_t, naa_runs)', &
    'offsetof(naa_stats_energy_function_t, naa_j)', 'offsetof(naa_stats_energy_function_t, naa_bytes)', &
    'offsetof(naa_stats_energy_function_t, naa_source)', 'stride of naa_stats_energy_function_t[]', &
    'sizeof(naa_stats_energy_t)', 'offsetof(naa_stats_energy_t, host_source)', &
    'offsetof(naa_stats_energy_t, host_unavailable)', 'offsetof(naa_stats_energy_t, n_functions)', &
    'sizeof(naa_handle_info_t)', &
    'offsetof(naa_handle_info_t, transport)', 'offsetof(naa_handle_info_t, function_code)', &
    'offsetof(naa_handle_info_t, regions)', 'offsetof(naa_handle_info_t, pacing_us)', &
    'offsetof(naa_handle_info_t, progress)']
  character(len=*), parameter :: constant_names(N_CONSTANTS) = [character(len=28) :: &
    'NAA_SUCCESS', 'NAA_ERR_INVALID_ARGUMENT', 'NAA_ERR_INVALID_HANDLE', 'NAA_ERR_NO_NAA', &
    'NAA_ERR_CONNECTION', 'NAA_ERR_TRANSPORT', 'NAA_ERR_TIMEOUT', 'NAA_ERR_NAA', &
    'NAA_ERR_NO_RESOURCES', 'NAA_ERR_PROTOCOL', 'NAA_ERR_STATE', 'NAA_ERR_CONFIG', &
    'NAA_ERR_UNSUPPORTED', 'NAA_ERR_INTERNAL', 'NAA_RC_SUCCESS', 'NAA_RC_SOCKET_NOT_AVAILABLE', &
    'NAA_RC_KERNEL_TIMEOUT', 'NAA_RC_APPLICATION_MIN', 'NAA_RC_APPLICATION_MAX', &
    'NAA_VERSION_MAJOR', 'NAA_VERSION_MINOR', 'NAA_VERSION_PATCH', 'NAA_ERR_IN_STATUS', &
    'NAA_UNDEFINED', 'NAA_ATTR_VERSION', 'NAA_ATTR_UNSET', 'NAA_LOG_LEVEL_ERROR', &
    'NAA_LOG_LEVEL_WARN', 'NAA_LOG_LEVEL_INFO', 'NAA_LOG_LEVEL_DEBUG', 'NAA_ERR_CANCELED']
  integer(c_int), parameter :: fortran_constants(N_CONSTANTS) = [ &
    NAA_SUCCESS, NAA_ERR_INVALID_ARGUMENT, NAA_ERR_INVALID_HANDLE, NAA_ERR_NO_NAA, &
    NAA_ERR_CONNECTION, NAA_ERR_TRANSPORT, NAA_ERR_TIMEOUT, NAA_ERR_NAA, &
    NAA_ERR_NO_RESOURCES, NAA_ERR_PROTOCOL, NAA_ERR_STATE, NAA_ERR_CONFIG, &
    NAA_ERR_UNSUPPORTED, NAA_ERR_INTERNAL, NAA_RC_SUCCESS, NAA_RC_SOCKET_NOT_AVAILABLE, &
    NAA_RC_KERNEL_TIMEOUT, NAA_RC_APPLICATION_MIN, NAA_RC_APPLICATION_MAX, &
    NAA_VERSION_MAJOR, NAA_VERSION_MINOR, NAA_VERSION_PATCH, NAA_ERR_IN_STATUS, &
    NAA_UNDEFINED, int(NAA_ATTR_VERSION, c_int), int(NAA_ATTR_UNSET, c_int), &
    NAA_LOG_LEVEL_ERROR, NAA_LOG_LEVEL_WARN, NAA_LOG_LEVEL_INFO, NAA_LOG_LEVEL_DEBUG, &
    NAA_ERR_CANCELED]

  type(naa_param_t), target :: p(2), inputs(2), outputs(1)
  type(naa_handle), target :: h
  type(naa_status), target :: st, sts(2)
  type(naa_attr_t), target :: attr
  type(naa_handle) :: hs(2)
  type(naa_stats_function_t), target :: fs(2)
  type(naa_stats_energy_function_t), target :: fe(2)
  type(naa_stats_energy_t), target :: energy
  type(naa_stats_t), target :: totals
  type(naa_handle_info_t), target :: info
  character(kind=c_char, len=16), target :: stats_on
  type(c_ptr), target :: params(2)
  integer(c_int), target :: lines
  character(kind=c_char, len=32), target :: where
  integer(c_int) :: index
  real(c_double), target :: a(16), b(16), c(16)
  integer(c_size_t) :: c_layout(N_LAYOUT), f_layout(N_LAYOUT)
  integer(c_int) :: c_constants(N_CONSTANTS), major, minor, patch, port
  character(len=:), allocatable :: cause
  logical(c_bool) :: flag
  character(len=32) :: expected, spec
  integer :: i, failures

  failures = 0
  ! Before libnaa reads its log level (at its first log line): the failed calls' causes, at
  ! info, reach the log handler below.
  call expect(set_env('NAA_LOG_LEVEL', 'info') == 0, 'setenv NAA_LOG_LEVEL')

  ! --- layout -------------------------------------------------------------------------------
  call naa_test_c_layout(c_layout)
  f_layout = [c_sizeof(p(1)), offset(c_loc(p(1)%addr), c_loc(p(1))), &
              offset(c_loc(p(1)%size), c_loc(p(1))), offset(c_loc(p(1)%single_send), c_loc(p(1))), &
              offset(c_loc(p(2)), c_loc(p(1))), c_sizeof(h), offset(c_loc(h%id), c_loc(h)), &
              c_sizeof(st), offset(c_loc(st%naa_return_code), c_loc(st)), &
              offset(c_loc(st%immediate), c_loc(st)), offset(c_loc(st%bytes_received), c_loc(st)), &
              offset(c_loc(st%function_code), c_loc(st)), offset(c_loc(st%error), c_loc(st)), &
              c_sizeof(attr), offset(c_loc(attr%size), c_loc(attr)), &
              offset(c_loc(attr%version), c_loc(attr)), offset(c_loc(attr%naa), c_loc(attr)), &
              offset(c_loc(attr%transport), c_loc(attr)), offset(c_loc(attr%timeout_ms), c_loc(attr)), &
              offset(c_loc(attr%progress), c_loc(attr)), offset(c_loc(attr%auth_key), c_loc(attr)), &
              offset(c_loc(attr%local_ip), c_loc(attr)), offset(c_loc(attr%device), c_loc(attr)), &
              offset(c_loc(attr%pacing_us), c_loc(attr)), offset(c_loc(attr%params), c_loc(attr)), &
              offset(c_loc(attr%connect_timeout_ms), c_loc(attr)), offset(c_loc(attr%reconnect), c_loc(attr)), &
              c_sizeof(fs(1)), offset(c_loc(fs(1)%naa), c_loc(fs(1))), &
              offset(c_loc(fs(1)%invocations), c_loc(fs(1))), offset(c_loc(fs(1)%invoke_s), c_loc(fs(1))), &
              offset(c_loc(fs(1)%served), c_loc(fs(1))), offset(c_loc(fs(1)%transfer_s), c_loc(fs(1))), &
              offset(c_loc(fs(1)%service_s), c_loc(fs(1))), offset(c_loc(fs(2)), c_loc(fs(1))), &
              c_sizeof(totals), offset(c_loc(totals%errors), c_loc(totals)), &
              offset(c_loc(totals%n_functions), c_loc(totals)), &
              c_sizeof(fe(1)), offset(c_loc(fe(1)%naa), c_loc(fe(1))), &
              offset(c_loc(fe(1)%windows), c_loc(fe(1))), offset(c_loc(fe(1)%window_s), c_loc(fe(1))), &
              offset(c_loc(fe(1)%host_j), c_loc(fe(1))), offset(c_loc(fe(1)%bytes), c_loc(fe(1))), &
              offset(c_loc(fe(1)%naa_runs), c_loc(fe(1))), offset(c_loc(fe(1)%naa_j), c_loc(fe(1))), &
              offset(c_loc(fe(1)%naa_bytes), c_loc(fe(1))), offset(c_loc(fe(1)%naa_source), c_loc(fe(1))), &
              offset(c_loc(fe(2)), c_loc(fe(1))), c_sizeof(energy), &
              offset(c_loc(energy%host_source), c_loc(energy)), &
              offset(c_loc(energy%host_unavailable), c_loc(energy)), &
              offset(c_loc(energy%n_functions), c_loc(energy)), c_sizeof(info), &
              offset(c_loc(info%transport), c_loc(info)), offset(c_loc(info%function_code), c_loc(info)), &
              offset(c_loc(info%regions), c_loc(info)), offset(c_loc(info%pacing_us), c_loc(info)), &
              offset(c_loc(info%progress), c_loc(info))]
  do i = 1, N_LAYOUT
    call expect(f_layout(i) == c_layout(i), trim(layout_names(i)), int(f_layout(i)), int(c_layout(i)))
  end do

  ! --- constants ----------------------------------------------------------------------------
  call naa_test_c_constants(c_constants)
  do i = 1, N_CONSTANTS
    call expect(fortran_constants(i) == c_constants(i), trim(constant_names(i)), &
                fortran_constants(i), c_constants(i))
  end do

  ! --- strings ------------------------------------------------------------------------------
  call expect(naa_strerror_f(NAA_SUCCESS) == 'success', 'naa_strerror_f(NAA_SUCCESS) = "' // &
              naa_strerror_f(NAA_SUCCESS) // '"')
  call expect(naa_strerror_f(NAA_ERR_TIMEOUT) == 'timed out (see NAA_TIMEOUT; connecting: NAA_CONNECT_TIMEOUT)', &
              'naa_strerror_f(NAA_ERR_TIMEOUT) = "' // naa_strerror_f(NAA_ERR_TIMEOUT) // '"')
  call expect(naa_strerror_f(-1_c_int) == 'unknown error', 'naa_strerror_f(-1) = "' // &
              naa_strerror_f(-1_c_int) // '"')
  write (expected, '(i0,".",i0,".",i0)') NAA_VERSION_MAJOR, NAA_VERSION_MINOR, NAA_VERSION_PATCH
  call expect(naa_version_f() == trim(expected), 'naa_version_f() = "' // naa_version_f() // '"')
  call expect(naa_version_f(major, minor, patch) == trim(expected) .and. major == NAA_VERSION_MAJOR &
              .and. minor == NAA_VERSION_MINOR .and. patch == NAA_VERSION_PATCH, &
              'naa_version_f(major, minor, patch) numbers')

  ! --- calls on a handle that was never created ---------------------------------------------
  call expect(h%id == NAA_HANDLE_NULL%id, 'a new naa_handle is NAA_HANDLE_NULL')
  call expect(naa_invoke(h) == NAA_ERR_INVALID_HANDLE, 'naa_invoke(null handle)')
  flag = .true.
  call expect(naa_test(h, flag, st) == NAA_ERR_INVALID_HANDLE, 'naa_test(null handle)')
  call expect(.not. logical(flag), 'naa_test sets the logical(c_bool) flag to .false.')
  call expect(naa_wait(h, st) == NAA_ERR_INVALID_HANDLE, 'naa_wait(null handle)')
  call expect(naa_cancel(h) == NAA_ERR_INVALID_HANDLE, 'naa_cancel(null handle)')
  call expect(naa_finalize(h) == NAA_ERR_INVALID_HANDLE, 'naa_finalize(null handle)')

  ! --- naa_create's arguments arrive intact -------------------------------------------------
  inputs(1) = naa_param_t(c_loc(a), c_sizeof(a), .false._c_bool)
  inputs(2) = naa_param_t(c_loc(b), c_sizeof(b), .true._c_bool)
  outputs(1) = naa_param_t(c_loc(c), c_sizeof(c), .false._c_bool)
  h%id = 42
  call expect(naa_create(0_c_int32_t, inputs, 2_c_size_t, outputs, 1_c_size_t, h) == NAA_ERR_INVALID_ARGUMENT &
              .and. h%id == 0, 'naa_create(function code 0) is refused and nulls the handle')
  h%id = 42
  call expect(naa_create(10_c_int32_t, inputs, 0_c_size_t, outputs, 1_c_size_t, h) == NAA_ERR_INVALID_ARGUMENT &
              .and. h%id == 0, 'naa_create(n_inputs = 0) is refused')
  ! ...and the cause is readable: the thread's last failure.
  cause = naa_last_error_f(code=major)
  call expect(len(cause) > 12, 'naa_last_error_f() = "' // cause // '"')
  call expect(cause(1:min(12, len(cause))) == 'naa_create: ', 'naa_last_error_f() = "' // cause // '"')
  call expect(major == NAA_ERR_INVALID_ARGUMENT, 'naa_last_error_f(code=) is the call''s code')
  cause = naa_rc_string_f(127_c_int)
  call expect(cause(1:min(21, len(cause))) == 'unknown function code', &
              'naa_rc_string_f(0x7f) = "' // cause // '"')
  ! Only code 11 is served: code 10 with valid buffers passes every argument check and then
  ! finds no NAA.
  call expect(set_env('NAA_SPEC', '127.0.0.1:1:11:2') == 0, 'setenv NAA_SPEC')
  call expect(naa_create(10_c_int32_t, inputs, 2_c_size_t, outputs, 1_c_size_t, h) == NAA_ERR_NO_NAA, &
              'naa_create(10, 2 inputs, 1 output) with only code 11 served: NAA_ERR_NO_NAA')
  ! Code 10 with 2 inputs served on a port nothing listens on: the call gets as far as
  ! connecting, so code, inputs, counts and outputs all reached the library as sent.
  port = naa_test_c_unused_port()
  write (spec, '("127.0.0.1:",i0,":10:2")') port
  call expect(port > 0 .and. set_env('NAA_SPEC', trim(spec)) == 0, 'setenv NAA_SPEC ' // trim(spec))
  call expect(naa_create(10_c_int32_t, inputs, 2_c_size_t, outputs, 1_c_size_t, h) == NAA_ERR_CONNECTION &
              .and. h%id == 0, 'naa_create(10, 2 inputs, 1 output) against a closed port: NAA_ERR_CONNECTION')
  ! The same NAA_SPEC entry with 1 input: refused while resolving, so n_inputs arrived as 1.
  call expect(naa_create(10_c_int32_t, inputs, 1_c_size_t, outputs, 1_c_size_t, h) == NAA_ERR_INVALID_ARGUMENT, &
              'naa_create(10, 1 input) against an entry for 2 inputs: NAA_ERR_INVALID_ARGUMENT')

  ! --- naa_create_attr and the completion calls ----------------------------------------------
  ! attr%naa names a closed port: the call connects there (not to NAA_SPEC's), within
  ! attr%timeout_ms, so attr and its string arrived as set.
  attr = naa_attr_init()
  call expect(attr%size == c_sizeof(attr) .and. attr%version == NAA_ATTR_VERSION .and. &
              attr%timeout_ms == NAA_ATTR_UNSET, 'naa_attr_init() is NAA_ATTR_INIT')
  write (where, '("127.0.0.1:",i0,a)') port, c_null_char
  attr%naa = c_loc(where)
  attr%timeout_ms = 2000
  call expect(naa_create_attr(10_c_int32_t, inputs, 1_c_size_t, outputs, 1_c_size_t, attr, h) &
              == NAA_ERR_CONNECTION, 'naa_create_attr(attr%naa = a closed port): NAA_ERR_CONNECTION')
  attr%timeout_ms = 0
  call expect(naa_create_attr(10_c_int32_t, inputs, 1_c_size_t, outputs, 1_c_size_t, attr, h) &
              == NAA_ERR_INVALID_ARGUMENT, 'naa_create_attr(attr%timeout_ms = 0): NAA_ERR_INVALID_ARGUMENT')
  call expect(naa_create_attr(10_c_int32_t, inputs, 1_c_size_t, outputs, 1_c_size_t, naa_attr_t(), h) &
              == NAA_ERR_INVALID_ARGUMENT, 'naa_create_attr(naa_attr_t() without naa_attr_init)')
  hs = NAA_HANDLE_NULL
  index = 0
  call expect(naa_waitany(2_c_int, hs, index, st) == NAA_SUCCESS .and. index == NAA_UNDEFINED, &
              'naa_waitany(two null handles): index NAA_UNDEFINED')
  call expect(naa_testany(2_c_int, hs, index, flag, st) == NAA_SUCCESS .and. logical(flag) .and. &
              index == NAA_UNDEFINED, 'naa_testany(two null handles): flag, index NAA_UNDEFINED')
  call expect(naa_waitall(2_c_int, hs, sts) == NAA_SUCCESS, 'naa_waitall(two null handles)')
  call expect(naa_testall(-1_c_int, hs, flag, sts) == NAA_ERR_INVALID_ARGUMENT, 'naa_testall(count -1)')

  ! --- statistics, the handle query and the log handler ------------------------------------
  call expect(naa_stats_get(totals, fs, 2_c_size_t) == NAA_ERR_STATE, 'naa_stats_get while off: NAA_ERR_STATE')
  call expect(naa_handle_info(NAA_HANDLE_NULL, info) == NAA_ERR_INVALID_HANDLE, &
              'naa_handle_info(NAA_HANDLE_NULL): NAA_ERR_INVALID_HANDLE')
  lines = 0
  call expect(naa_set_log_handler(c_funloc(sink), c_loc(lines)) == NAA_SUCCESS, 'naa_set_log_handler(sink)')
  ! NAA_STATS=1 in attr%params turns statistics on at this create, which fails to connect.
  stats_on = 'NAA_STATS=1' // c_null_char
  params = [c_loc(stats_on), c_null_ptr]
  attr = naa_attr_init()
  attr%naa = c_loc(where)
  attr%params = c_loc(params)
  call expect(naa_create_attr(10_c_int32_t, inputs, 1_c_size_t, outputs, 1_c_size_t, attr, h) &
              == NAA_ERR_CONNECTION, 'naa_create_attr(NAA_STATS=1, a closed port): NAA_ERR_CONNECTION')
  call expect(lines >= 1 .and. last_level == NAA_LOG_LEVEL_INFO .and. &
              index_of(last_line, 'naa_create_attr: connection to') > 0, &
              'the log handler got the cause, at info: "' // trim(last_line) // '"')
  call expect(naa_set_log_handler(c_null_funptr, c_null_ptr) == NAA_SUCCESS, 'naa_set_log_handler(NULL)')
  call expect(naa_stats_get(totals, fs, 2_c_size_t) == NAA_SUCCESS, 'naa_stats_get once on')
  call expect(totals%creates == 1 .and. totals%errors(NAA_ERR_CONNECTION + 1) == 1 .and. &
              totals%n_functions == 0, 'naa_stats_t: 1 create, 1 NAA_ERR_CONNECTION, no function')
  call expect(naa_string_f(fs(1)%naa) == '', 'naa_string_f of an empty char field is ""')
  ! Energy: the sizes must be set (naa_stats_energy_init); NAA_ENERGY is off here.
  energy = naa_stats_energy_t()
  call expect(naa_stats_energy_get(energy, fe, 2_c_size_t) == NAA_ERR_INVALID_ARGUMENT, &
              'naa_stats_energy_get(sizes unset): NAA_ERR_INVALID_ARGUMENT')
  energy = naa_stats_energy_init()
  call expect(energy%size == c_sizeof(energy) .and. energy%function_size == c_sizeof(fe(1)), &
              'naa_stats_energy_init sets the sizes')
  call expect(naa_stats_energy_get(energy, fe, 2_c_size_t) == NAA_ERR_STATE, &
              'naa_stats_energy_get while NAA_ENERGY is off: NAA_ERR_STATE')

  if (failures > 0) then
    write (output_unit, '(i0,a)') failures, ' check(s) FAILED'
    stop 1
  end if
  write (output_unit, '(a)') 'all checks passed'
  deallocate (cause)  ! a main program's allocatables are not freed at its end: LeakSanitizer

contains

  subroutine expect(ok, what, fortran_value, c_value)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer, intent(in), optional :: fortran_value, c_value

    if (present(fortran_value) .and. present(c_value)) then
      write (output_unit, '(a,a,a,i0,a,i0)') merge('ok:   ', 'FAIL: ', ok), what, ': Fortran ', fortran_value, &
        ', C ', c_value
    else
      write (output_unit, '(a,a)') merge('ok:   ', 'FAIL: ', ok), what
    end if
    if (.not. ok) failures = failures + 1
  end subroutine expect

  function offset(field, base) result(bytes)
    type(c_ptr), intent(in) :: field, base
    integer(c_size_t) :: bytes

    bytes = int(transfer(field, 0_c_intptr_t) - transfer(base, 0_c_intptr_t), c_size_t)
  end function offset

  function set_env(name, value) result(rc)
    character(len=*), intent(in) :: name, value
    integer(c_int) :: rc

    rc = naa_test_c_setenv(name // c_null_char, value // c_null_char)
  end function set_env
end program test_fortran_binding
