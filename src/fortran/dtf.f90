!> Fortran interface of dtf: `use dtf`, then
!>     call dtf_init(config_file, component_name, ierr)   ! collective over MPI_COMM_WORLD, after MPI_Init
!>     call dtf_transfer(filename, ncid, ierr)            ! collective over the ranks of both components
!>                                                        ! that opened the file
!>     call dtf_finalize(ierr)                            ! collective over MPI_COMM_WORLD, before MPI_Finalize
!> ierr is 0 on success, a DTF_ERR_* code otherwise (see dtf.h); dtf_strerror(ierr) describes it and
!> dtf_errmsg() gives the detailed message of the last error.
!> Per-phase timers (see dtf.h): call dtf_timers(1, ierr), then
!>     call dtf_timers_read(seconds, bytes, reset, ierr)  ! real(8) seconds(DTF_NUM_PHASES), integer(8) bytes(...)
!> Message counters (see dtf.h):
!>     call dtf_counters_read(messages, bytes, reset, ierr)  ! integer(8) messages(DTF_NUM_COUNTS), bytes(...)
!> Without the module, the three calls above work as plain external subroutines (src/fortran/externals.c).
module dtf
  use, intrinsic :: iso_c_binding, only: c_char, c_int, c_double, c_long_long, c_null_char, c_ptr, c_f_pointer, &
                                         c_associated
  implicit none
  private
  public :: dtf_init, dtf_transfer, dtf_finalize, dtf_strerror, dtf_errmsg, dtf_timers, dtf_timers_read, &
            dtf_counters_read

  ! Phases of the timers, as DTF_PHASE_* in dtf.h (0-based: seconds(DTF_PHASE_OPEN + 1) is "open").
  integer, parameter, public :: DTF_PHASE_OPEN = 0, DTF_PHASE_MATCH = 1, DTF_PHASE_PACK = 2, &
                                DTF_PHASE_TRANSFER = 3, DTF_PHASE_WAIT = 4, DTF_PHASE_CLOSE = 5, DTF_NUM_PHASES = 6
  ! Message counts, as DTF_COUNT_* in dtf.h (0-based, as the phases).
  integer, parameter, public :: DTF_COUNT_CONTROL_SENT = 0, DTF_COUNT_CONTROL_RECEIVED = 1, DTF_COUNT_DATA_SENT = 2, &
                                DTF_COUNT_DATA_RECEIVED = 3, DTF_COUNT_COLLECTIVES = 4, &
                                DTF_COUNT_COLLECTIVE_SENT = 5, DTF_COUNT_COLLECTIVE_RECEIVED = 6, &
                                DTF_COUNT_COPIED_WRITING = 7, DTF_COUNT_COPIED_READING = 8, DTF_NUM_COUNTS = 9

  interface
    integer(c_int) function c_dtf_init(config, component) bind(C, name="dtf_init")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: config, component
    end function
    integer(c_int) function c_dtf_transfer(filename, ncid) bind(C, name="dtf_transfer")
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: filename
      integer(c_int), value :: ncid
    end function
    integer(c_int) function c_dtf_finalize() bind(C, name="dtf_finalize")
      import :: c_int
    end function
    type(c_ptr) function c_dtf_strerror(code) bind(C, name="dtf_strerror")
      import :: c_ptr, c_int
      integer(c_int), value :: code
    end function
    type(c_ptr) function c_dtf_errmsg() bind(C, name="dtf_errmsg")
      import :: c_ptr
    end function
    integer(c_int) function c_dtf_timers(on) bind(C, name="dtf_timers")
      import :: c_int
      integer(c_int), value :: on
    end function
    integer(c_int) function c_dtf_timers_read(seconds, bytes, reset) bind(C, name="dtf_timers_read")
      import :: c_int, c_double, c_long_long
      real(c_double), intent(out) :: seconds(*)
      integer(c_long_long), intent(out) :: bytes(*)
      integer(c_int), value :: reset
    end function
    integer(c_int) function c_dtf_counters_read(messages, bytes, reset) bind(C, name="dtf_counters_read")
      import :: c_int, c_long_long
      integer(c_long_long), intent(out) :: messages(*), bytes(*)
      integer(c_int), value :: reset
    end function
    integer(c_int) function c_strlen(s) bind(C, name="strlen")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
    end function
  end interface

contains

  subroutine dtf_init(config, component, ierr)
    character(len=*), intent(in) :: config, component
    integer, intent(out) :: ierr
    ierr = c_dtf_init(c_string(config), c_string(component))
  end subroutine

  subroutine dtf_transfer(filename, ncid, ierr)
    character(len=*), intent(in) :: filename
    integer, intent(in) :: ncid
    integer, intent(out) :: ierr
    ierr = c_dtf_transfer(c_string(filename), int(ncid, c_int))
  end subroutine

  subroutine dtf_finalize(ierr)
    integer, intent(out) :: ierr
    ierr = c_dtf_finalize()
  end subroutine

  subroutine dtf_timers(on, ierr)
    integer, intent(in) :: on
    integer, intent(out) :: ierr
    ierr = c_dtf_timers(int(on, c_int))
  end subroutine

  subroutine dtf_timers_read(seconds, bytes, reset, ierr)
    real(c_double), intent(out) :: seconds(DTF_NUM_PHASES)
    integer(c_long_long), intent(out) :: bytes(DTF_NUM_PHASES)
    integer, intent(in) :: reset
    integer, intent(out) :: ierr
    ierr = c_dtf_timers_read(seconds, bytes, int(reset, c_int))
  end subroutine

  subroutine dtf_counters_read(messages, bytes, reset, ierr)
    integer(c_long_long), intent(out) :: messages(DTF_NUM_COUNTS), bytes(DTF_NUM_COUNTS)
    integer, intent(in) :: reset
    integer, intent(out) :: ierr
    ierr = c_dtf_counters_read(messages, bytes, int(reset, c_int))
  end subroutine

  function dtf_strerror(code) result(msg)
    integer, intent(in) :: code
    character(len=:), allocatable :: msg
    msg = f_string(c_dtf_strerror(int(code, c_int)))
  end function

  function dtf_errmsg() result(msg)
    character(len=:), allocatable :: msg
    msg = f_string(c_dtf_errmsg())
  end function

  ! A Fortran string (blank-padded or ending in char(0)) as a NUL-terminated C string.
  function c_string(s) result(r)
    character(len=*), intent(in) :: s
    character(kind=c_char, len=:), allocatable :: r
    integer :: n
    n = index(s, c_null_char) - 1
    if (n < 0) n = len_trim(s)
    r = s(1:n) // c_null_char
  end function

  function f_string(p) result(r)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: r
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    if (.not. c_associated(p)) then
      r = ''
      return
    end if
    n = c_strlen(p)
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: r)
    do i = 1, n
      r(i:i) = chars(i)
    end do
  end function

end module dtf
