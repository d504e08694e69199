! SPDX-License-Identifier: BSD-3-Clause
! naa.f90 - Fortran 2008 binding of libnaa (include/naa.h).
!
! The derived types are bind(C) and the calls are bind(C) interfaces straight to the C
! functions: no wrapper code runs between a Fortran program and libnaa. Only the two string
! functions have Fortran wrappers, because C strings are not Fortran strings:
! naa_strerror_f(code) and naa_version_f([major, minor, patch]), naa_rc_string_f(rc) and
! naa_last_error_f([handle] [, code]) (naa_last_error(3)); naa_string_f turns a C string
! (type(c_ptr), as a log handler gets its line) or a NUL-padded character array (the fields
! of naa_stats_function_t and naa_handle_info_t) into a Fortran string.
!
!   use naa
!   real(c_double), allocatable, target :: a(:), c(:)
!   type(naa_param_t) :: in(1), out(1)
!   type(naa_handle) :: h            ! starts as NAA_HANDLE_NULL (id = 0)
!   type(naa_status) :: st
!   in(1)  = naa_param_t(c_loc(a), size(a, kind=c_size_t) * c_sizeof(0.0_c_double), .false._c_bool)
!   out(1) = naa_param_t(c_loc(c), size(c, kind=c_size_t) * c_sizeof(0.0_c_double), .false._c_bool)
!   rc = naa_create(10_c_int32_t, in, 1_c_size_t, out, 1_c_size_t, h)
!   rc = naa_invoke(h)
!   rc = naa_wait(h, st)
!   rc = naa_finalize(h)
!
! The buffers must have the TARGET attribute, be contiguous, and stay allocated until
! naa_finalize. Fortran has no unsigned integers: naa_handle%id (C uint64_t) is an opaque
! integer(c_int64_t), naa_status%immediate and %function_code (uint32_t) are
! integer(c_int32_t) and naa_status%naa_return_code (uint8_t) is integer(c_int8_t); read the
! return code as iand(int(st%naa_return_code), 255) (every NAA_RC_* is below 128 anyway).
! naa_test and naa_wait always take a status here (the C API also accepts NULL).
!
! naa_create_attr takes a naa_attr_t from naa_attr_init() (NAA_ATTR_INIT); its strings are
! C strings the program keeps, e.g.
!   character(kind=c_char, len=32), target :: where = '10.0.0.7:12345' // c_null_char
!   type(naa_attr_t) :: attr
!   attr = naa_attr_init()
!   attr%naa = c_loc(where)
!   attr%timeout_ms = 5000
!   rc = naa_create_attr(10_c_int32_t, in, 1_c_size_t, out, 1_c_size_t, attr, h)
! naa_waitall, naa_waitany, naa_testany and naa_testall take arrays of handles and statuses;
! the index naa_waitany and naa_testany return is C's, counted from 0 (NAA_UNDEFINED when no
! handle was active): the Fortran position is index + 1.
module naa
  use, intrinsic :: iso_c_binding, only: c_bool, c_char, c_int, c_int8_t, c_int32_t, c_int64_t, &
                                         c_f_pointer, c_ptr, c_size_t, c_associated, c_null_ptr, &
                                         c_sizeof, c_loc, c_double, c_funptr, c_null_char
  implicit none
  private

  ! include/naa.h: NAA_VERSION_*
  integer(c_int), parameter, public :: NAA_VERSION_MAJOR = 0
  integer(c_int), parameter, public :: NAA_VERSION_MINOR = 1
  integer(c_int), parameter, public :: NAA_VERSION_PATCH = 0

  ! enum naa_error: every call returns NAA_SUCCESS or one of these
  integer(c_int), parameter, public :: NAA_SUCCESS = 0
  integer(c_int), parameter, public :: NAA_ERR_INVALID_ARGUMENT = 1
  integer(c_int), parameter, public :: NAA_ERR_INVALID_HANDLE = 2
  integer(c_int), parameter, public :: NAA_ERR_NO_NAA = 3
  integer(c_int), parameter, public :: NAA_ERR_CONNECTION = 4
  integer(c_int), parameter, public :: NAA_ERR_TRANSPORT = 5
  integer(c_int), parameter, public :: NAA_ERR_TIMEOUT = 6
  integer(c_int), parameter, public :: NAA_ERR_NAA = 7
  integer(c_int), parameter, public :: NAA_ERR_NO_RESOURCES = 8
  integer(c_int), parameter, public :: NAA_ERR_PROTOCOL = 9
  integer(c_int), parameter, public :: NAA_ERR_STATE = 10
  integer(c_int), parameter, public :: NAA_ERR_CONFIG = 11
  integer(c_int), parameter, public :: NAA_ERR_UNSUPPORTED = 12
  integer(c_int), parameter, public :: NAA_ERR_INTERNAL = 13
  integer(c_int), parameter, public :: NAA_ERR_IN_STATUS = 14
  integer(c_int), parameter, public :: NAA_ERR_CANCELED = 15

  ! naa_waitany/naa_testany's index when no handle was active
  integer(c_int), parameter, public :: NAA_UNDEFINED = -32766

  ! naa_attr_t: NAA_ATTR_VERSION, and NAA_ATTR_UNSET for its numbers
  integer(c_int32_t), parameter, public :: NAA_ATTR_VERSION = 2
  integer(c_int64_t), parameter, public :: NAA_ATTR_UNSET = -1

  ! enum naa_return_code: naa_status%naa_return_code
  integer(c_int), parameter, public :: NAA_RC_SUCCESS = int(z'00', c_int)
  integer(c_int), parameter, public :: NAA_RC_SOCKET_NOT_AVAILABLE = int(z'01', c_int)
  integer(c_int), parameter, public :: NAA_RC_KERNEL_TIMEOUT = int(z'02', c_int)
  integer(c_int), parameter, public :: NAA_RC_APPLICATION_MIN = int(z'10', c_int)
  integer(c_int), parameter, public :: NAA_RC_APPLICATION_MAX = int(z'7f', c_int)

  ! struct naa_param
  type, bind(C), public :: naa_param_t
    type(c_ptr) :: addr = c_null_ptr
    integer(c_size_t) :: size = 0
    logical(c_bool) :: single_send = .false.
  end type naa_param_t

  ! struct naa_handle; the default value is NAA_HANDLE_NULL
  type, bind(C), public :: naa_handle
    integer(c_int64_t) :: id = 0
  end type naa_handle

  type(naa_handle), parameter, public :: NAA_HANDLE_NULL = naa_handle(0_c_int64_t)

  ! struct naa_status (uint8_t, uint8_t, uint32_t, size_t, uint32_t: the companion C
  ! compiler's padding)
  type, bind(C), public :: naa_status
    integer(c_int8_t) :: naa_return_code = 0
    integer(c_int8_t) :: error = 0
    integer(c_int32_t) :: immediate = 0
    integer(c_size_t) :: bytes_received = 0
    integer(c_int32_t) :: function_code = 0
  end type naa_status

  ! struct naa_attr: take it from naa_attr_init(), which sets size and version as
  ! NAA_ATTR_INIT does (left at 0 here, naa_create_attr refuses it). Strings are type(c_ptr)
  ! to NUL-terminated character(kind=c_char) the program keeps; c_null_ptr is unset.
  type, bind(C), public :: naa_attr_t
    integer(c_size_t) :: size = 0
    integer(c_int32_t) :: version = 0
    type(c_ptr) :: naa = c_null_ptr
    type(c_ptr) :: transport = c_null_ptr
    integer(c_int64_t) :: timeout_ms = NAA_ATTR_UNSET
    type(c_ptr) :: progress = c_null_ptr
    type(c_ptr) :: auth_key = c_null_ptr
    type(c_ptr) :: local_ip = c_null_ptr
    type(c_ptr) :: device = c_null_ptr
    integer(c_int64_t) :: pacing_us = NAA_ATTR_UNSET
    type(c_ptr) :: params = c_null_ptr  ! c_loc of a type(c_ptr) array ending in c_null_ptr
    integer(c_int64_t) :: connect_timeout_ms = NAA_ATTR_UNSET
    integer(c_int64_t) :: reconnect = NAA_ATTR_UNSET
  end type naa_attr_t

  ! enum naa_log_level: the level a log handler (naa_set_log_handler) gets
  integer(c_int), parameter, public :: NAA_LOG_LEVEL_ERROR = 0
  integer(c_int), parameter, public :: NAA_LOG_LEVEL_WARN = 1
  integer(c_int), parameter, public :: NAA_LOG_LEVEL_INFO = 2
  integer(c_int), parameter, public :: NAA_LOG_LEVEL_DEBUG = 3

  ! struct naa_stats_function (naa_stats_get): naa is NUL-padded, read it with naa_string_f
  type, bind(C), public :: naa_stats_function_t
    integer(c_int32_t) :: function_code = 0
    character(kind=c_char) :: naa(64) = c_null_char
    integer(c_int64_t) :: invocations = 0
    integer(c_int64_t) :: bytes_out = 0
    integer(c_int64_t) :: bytes_back = 0
    integer(c_int64_t) :: waits = 0
    integer(c_int64_t) :: tests = 0
    real(c_double) :: invoke_s = 0
    real(c_double) :: wait_s = 0
    real(c_double) :: test_s = 0
    integer(c_int64_t) :: served = 0
    real(c_double) :: transfer_s = 0
    real(c_double) :: service_s = 0
  end type naa_stats_function_t

  ! struct naa_stats: errors(code + 1) counts the failed calls of error code code (errors(1):
  ! codes beyond the array)
  type, bind(C), public :: naa_stats_t
    integer(c_int64_t) :: creates = 0
    real(c_double) :: create_s = 0
    integer(c_int64_t) :: completion_calls = 0
    real(c_double) :: completion_s = 0
    integer(c_int64_t) :: errors(16) = 0
    integer(c_size_t) :: n_functions = 0
  end type naa_stats_t

  ! struct naa_stats_energy_function (naa_stats_energy_get): the host's joules over the
  ! measured invocation windows of a function code and NAA, and the NAA's over its kernel runs
  type, bind(C), public :: naa_stats_energy_function_t
    integer(c_int32_t) :: function_code = 0
    character(kind=c_char) :: naa(64) = c_null_char
    integer(c_int64_t) :: windows = 0
    real(c_double) :: window_s = 0
    real(c_double) :: host_j = 0
    integer(c_int64_t) :: bytes = 0
    ! the NAA's own joules over its kernel runs, where its replies carry them
    integer(c_int64_t) :: naa_runs = 0
    real(c_double) :: naa_j = 0
    integer(c_int64_t) :: naa_bytes = 0
    character(kind=c_char) :: naa_source(64) = c_null_char
  end type naa_stats_energy_function_t

  ! struct naa_stats_energy: size and function_size must be set, as naa_stats_energy_init does
  type, bind(C), public :: naa_stats_energy_t
    integer(c_size_t) :: size = 0
    integer(c_size_t) :: function_size = 0
    character(kind=c_char) :: host_source(128) = c_null_char
    character(kind=c_char) :: host_unavailable(512) = c_null_char
    integer(c_size_t) :: n_functions = 0
  end type naa_stats_energy_t

  ! struct naa_handle_info (naa_handle_info): strings NUL-padded, read them with naa_string_f
  type, bind(C), public :: naa_handle_info_t
    character(kind=c_char) :: naa(64) = c_null_char
    character(kind=c_char) :: transport(32) = c_null_char
    integer(c_int32_t) :: function_code = 0
    integer(c_int32_t) :: regions = 0
    integer(c_int64_t) :: pacing_us = 0
    integer(c_int64_t) :: timeout_ms = 0
    character(kind=c_char) :: progress(24) = c_null_char
  end type naa_handle_info_t

  public :: naa_create, naa_create_attr, naa_invoke, naa_test, naa_wait, naa_cancel, naa_finalize
  public :: naa_waitall, naa_waitany, naa_testany, naa_testall
  public :: naa_stats_get, naa_stats_energy_get, naa_stats_energy_init, naa_handle_info
  public :: naa_set_log_handler
  public :: naa_attr_init, naa_strerror_f, naa_version_f, naa_rc_string_f, naa_last_error_f
  public :: naa_string_f

  ! A C string, or a NUL-padded character array, as a Fortran string.
  interface naa_string_f
    module procedure from_c_string, from_c_chars
  end interface naa_string_f

  interface
    ! int naa_create(uint32_t, naa_param_t *, size_t, naa_param_t *, size_t, naa_handle *)
    function naa_create(function_code, inputs, n_inputs, outputs, n_outputs, handle) &
        bind(C, name='naa_create') result(rc)
      import :: c_int, c_int32_t, c_size_t, naa_param_t, naa_handle
      integer(c_int32_t), value :: function_code
      type(naa_param_t), intent(in) :: inputs(*)
      integer(c_size_t), value :: n_inputs
      type(naa_param_t), intent(in) :: outputs(*)
      integer(c_size_t), value :: n_outputs
      type(naa_handle), intent(inout) :: handle
      integer(c_int) :: rc
    end function naa_create

    ! int naa_create_attr(uint32_t, naa_param_t *, size_t, naa_param_t *, size_t,
    !                     const naa_attr_t *, naa_handle *)
    function naa_create_attr(function_code, inputs, n_inputs, outputs, n_outputs, attr, handle) &
        bind(C, name='naa_create_attr') result(rc)
      import :: c_int, c_int32_t, c_size_t, naa_param_t, naa_attr_t, naa_handle
      integer(c_int32_t), value :: function_code
      type(naa_param_t), intent(in) :: inputs(*)
      integer(c_size_t), value :: n_inputs
      type(naa_param_t), intent(in) :: outputs(*)
      integer(c_size_t), value :: n_outputs
      type(naa_attr_t), intent(in) :: attr
      type(naa_handle), intent(inout) :: handle
      integer(c_int) :: rc
    end function naa_create_attr

    ! int naa_waitall(int, naa_handle[], naa_status[])
    function naa_waitall(count, handles, statuses) bind(C, name='naa_waitall') result(rc)
      import :: c_int, naa_handle, naa_status
      integer(c_int), value :: count
      type(naa_handle), intent(inout) :: handles(*)
      type(naa_status), intent(inout) :: statuses(*)
      integer(c_int) :: rc
    end function naa_waitall

    ! int naa_waitany(int, naa_handle[], int *, naa_status *)
    function naa_waitany(count, handles, index, status) bind(C, name='naa_waitany') result(rc)
      import :: c_int, naa_handle, naa_status
      integer(c_int), value :: count
      type(naa_handle), intent(inout) :: handles(*)
      integer(c_int), intent(out) :: index
      type(naa_status), intent(inout) :: status
      integer(c_int) :: rc
    end function naa_waitany

    ! int naa_testany(int, naa_handle[], int *, bool *, naa_status *)
    function naa_testany(count, handles, index, flag, status) bind(C, name='naa_testany') result(rc)
      import :: c_bool, c_int, naa_handle, naa_status
      integer(c_int), value :: count
      type(naa_handle), intent(inout) :: handles(*)
      integer(c_int), intent(out) :: index
      logical(c_bool), intent(out) :: flag
      type(naa_status), intent(inout) :: status
      integer(c_int) :: rc
    end function naa_testany

    ! int naa_testall(int, naa_handle[], bool *, naa_status[])
    function naa_testall(count, handles, flag, statuses) bind(C, name='naa_testall') result(rc)
      import :: c_bool, c_int, naa_handle, naa_status
      integer(c_int), value :: count
      type(naa_handle), intent(inout) :: handles(*)
      logical(c_bool), intent(out) :: flag
      type(naa_status), intent(inout) :: statuses(*)
      integer(c_int) :: rc
    end function naa_testall

    ! int naa_invoke(naa_handle *)
    function naa_invoke(handle) bind(C, name='naa_invoke') result(rc)
      import :: c_int, naa_handle
      type(naa_handle), intent(inout) :: handle
      integer(c_int) :: rc
    end function naa_invoke

    ! int naa_test(naa_handle *, bool *, naa_status *)
    function naa_test(handle, flag, status) bind(C, name='naa_test') result(rc)
      import :: c_bool, c_int, naa_handle, naa_status
      type(naa_handle), intent(inout) :: handle
      logical(c_bool), intent(out) :: flag
      type(naa_status), intent(inout) :: status
      integer(c_int) :: rc
    end function naa_test

    ! int naa_wait(naa_handle *, naa_status *)
    function naa_wait(handle, status) bind(C, name='naa_wait') result(rc)
      import :: c_int, naa_handle, naa_status
      type(naa_handle), intent(inout) :: handle
      type(naa_status), intent(inout) :: status
      integer(c_int) :: rc
    end function naa_wait

    ! int naa_cancel(naa_handle *)
    function naa_cancel(handle) bind(C, name='naa_cancel') result(rc)
      import :: c_int, naa_handle
      type(naa_handle), intent(inout) :: handle
      integer(c_int) :: rc
    end function naa_cancel

    ! int naa_finalize(naa_handle *)
    function naa_finalize(handle) bind(C, name='naa_finalize') result(rc)
      import :: c_int, naa_handle
      type(naa_handle), intent(inout) :: handle
      integer(c_int) :: rc
    end function naa_finalize

    ! int naa_stats_get(naa_stats_t *, naa_stats_function_t *, size_t): up to max_functions
    ! entries of functions (an array of at least that many)
    function naa_stats_get(totals, functions, max_functions) bind(C, name='naa_stats_get') &
        result(rc)
      import :: c_int, c_size_t, naa_stats_t, naa_stats_function_t
      type(naa_stats_t), intent(out) :: totals
      type(naa_stats_function_t), intent(inout) :: functions(*)
      integer(c_size_t), value :: max_functions
      integer(c_int) :: rc
    end function naa_stats_get

    ! int naa_stats_energy_get(naa_stats_energy_t *, naa_stats_energy_function_t *, size_t):
    ! totals from naa_stats_energy_init; up to max_functions entries of functions
    function naa_stats_energy_get(totals, functions, max_functions) &
        bind(C, name='naa_stats_energy_get') result(rc)
      import :: c_int, c_size_t, naa_stats_energy_t, naa_stats_energy_function_t
      type(naa_stats_energy_t), intent(inout) :: totals
      type(naa_stats_energy_function_t), intent(inout) :: functions(*)
      integer(c_size_t), value :: max_functions
      integer(c_int) :: rc
    end function naa_stats_energy_get

    ! int naa_handle_info(const naa_handle *, naa_handle_info_t *)
    function naa_handle_info(handle, info) bind(C, name='naa_handle_info') result(rc)
      import :: c_int, naa_handle, naa_handle_info_t
      type(naa_handle), intent(in) :: handle
      type(naa_handle_info_t), intent(out) :: info
      integer(c_int) :: rc
    end function naa_handle_info

    ! int naa_set_log_handler(naa_log_handler_t, void *): handler is c_funloc of a
    !   subroutine h(level, line, arg) bind(C)
    !     integer(c_int), value :: level
    !     type(c_ptr), value :: line, arg   ! naa_string_f(line) is the line
    ! or c_null_funptr to restore stderr.
    function naa_set_log_handler(handler, arg) bind(C, name='naa_set_log_handler') result(rc)
      import :: c_int, c_funptr, c_ptr
      type(c_funptr), value :: handler
      type(c_ptr), value :: arg
      integer(c_int) :: rc
    end function naa_set_log_handler

    ! const char *naa_strerror(int)
    function c_naa_strerror(error) bind(C, name='naa_strerror') result(s)
      import :: c_int, c_ptr
      integer(c_int), value :: error
      type(c_ptr) :: s
    end function c_naa_strerror

    ! const char *naa_rc_string(int)
    function c_naa_rc_string(rc) bind(C, name='naa_rc_string') result(s)
      import :: c_int, c_ptr
      integer(c_int), value :: rc
      type(c_ptr) :: s
    end function c_naa_rc_string

    ! int naa_last_error(const naa_handle *, char *, size_t)
    function c_naa_last_error(handle, buf, len) bind(C, name='naa_last_error') result(rc)
      import :: c_int, c_ptr, c_char, c_size_t
      type(c_ptr), value :: handle
      character(kind=c_char), intent(out) :: buf(*)
      integer(c_size_t), value :: len
      integer(c_int) :: rc
    end function c_naa_last_error

    ! const char *naa_version(int *, int *, int *)
    function c_naa_version(major, minor, patch) bind(C, name='naa_version') result(s)
      import :: c_int, c_ptr
      integer(c_int), intent(out) :: major, minor, patch
      type(c_ptr) :: s
    end function c_naa_version

    ! size_t strlen(const char *)
    function c_strlen(s) bind(C, name='strlen') result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
  end interface

contains

  ! NAA_STATS_ENERGY_INIT: the sizes this module's types have, for naa_stats_energy_get.
  function naa_stats_energy_init() result(totals)
    type(naa_stats_energy_t) :: totals
    type(naa_stats_energy_function_t) :: f

    totals%size = c_sizeof(totals)
    totals%function_size = c_sizeof(f)
  end function naa_stats_energy_init

  ! A NUL-terminated C string as a Fortran string ('' for NULL).
  function from_c_string(s) result(f)
    type(c_ptr), intent(in) :: s
    character(len=:), allocatable :: f
    character(kind=c_char), pointer :: chars(:)

    if (.not. c_associated(s)) then
      f = ''
      return
    end if
    call c_f_pointer(s, chars, [c_strlen(s)])
    f = from_c_chars(chars)
  end function from_c_string

  ! A NUL-padded character array (a C char[N] field) as a Fortran string, up to its first NUL.
  function from_c_chars(chars) result(f)
    character(kind=c_char), intent(in) :: chars(:)
    character(len=:), allocatable :: f
    integer :: i, n

    n = size(chars)
    do i = 1, size(chars)
      if (chars(i) == c_null_char) then
        n = i - 1
        exit
      end if
    end do
    allocate (character(len=n) :: f)
    do i = 1, n
      f(i:i) = chars(i)
    end do
  end function from_c_chars

  ! A naa_attr_t as NAA_ATTR_INIT makes it: every field unset, size and version this
  ! module's.
  function naa_attr_init() result(attr)
    type(naa_attr_t) :: attr

    attr%size = c_sizeof(attr)
    attr%version = NAA_ATTR_VERSION
  end function naa_attr_init

  ! English description of an error code, as naa_strerror.
  function naa_strerror_f(code) result(message)
    integer(c_int), intent(in) :: code
    character(len=:), allocatable :: message

    message = from_c_string(c_naa_strerror(code))
  end function naa_strerror_f

  ! Name of an NAA return code (naa_status%naa_return_code), as naa_rc_string.
  function naa_rc_string_f(rc) result(name)
    integer(c_int), intent(in) :: rc
    character(len=:), allocatable :: name

    name = from_c_string(c_naa_rc_string(rc))
  end function naa_rc_string_f

  ! Why the last failed call on handle failed, as naa_last_error; without handle, the calling
  ! thread's last failed call (a failed naa_create included). code, if given, gets its error
  ! code (NAA_SUCCESS if none failed).
  function naa_last_error_f(handle, code) result(cause)
    type(naa_handle), intent(in), target, optional :: handle
    integer(c_int), intent(out), optional :: code
    character(len=:), allocatable :: cause
    character(kind=c_char), target :: buf(512)
    type(c_ptr) :: h
    integer(c_int) :: rc

    h = c_null_ptr
    if (present(handle)) h = c_loc(handle)
    rc = c_naa_last_error(h, buf, int(size(buf), c_size_t))
    if (present(code)) code = rc
    cause = from_c_string(c_loc(buf))
  end function naa_last_error_f

  ! The library's version as 'MAJOR.MINOR.PATCH' (of the libnaa linked at run time), and
  ! its numbers if asked for.
  function naa_version_f(major, minor, patch) result(version)
    integer(c_int), intent(out), optional :: major, minor, patch
    character(len=:), allocatable :: version
    integer(c_int) :: v(3)

    version = from_c_string(c_naa_version(v(1), v(2), v(3)))
    if (present(major)) major = v(1)
    if (present(minor)) minor = v(2)
    if (present(patch)) patch = v(3)
  end function naa_version_f

end module naa
