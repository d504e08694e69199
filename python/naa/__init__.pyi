# SPDX-License-Identifier: BSD-3-Clause
# Type hints for the package naa (its functions and classes live in the extension naa._naa).
from types import TracebackType
from typing import Iterable, Mapping, NamedTuple, Sequence

from typing_extensions import Buffer  # collections.abc.Buffer from Python 3.12 on

__version__: str

ERR_INVALID_ARGUMENT: int
ERR_INVALID_HANDLE: int
ERR_NO_NAA: int
ERR_CONNECTION: int
ERR_TRANSPORT: int
ERR_TIMEOUT: int
ERR_NAA: int
ERR_NO_RESOURCES: int
ERR_PROTOCOL: int
ERR_STATE: int
ERR_CONFIG: int
ERR_UNSUPPORTED: int
ERR_INTERNAL: int
ERR_IN_STATUS: int
ERR_CANCELED: int
UNDEFINED: int

class Status(NamedTuple):
    """The result of a completed invocation (struct naa_status)."""
    naa_return_code: int
    immediate: int
    bytes_received: int
    function_code: int

class Error(Exception):
    """A libnaa call failed."""
    code: int  # one of the ERR_* constants
    name: str  # e.g. "NAA_ERR_TIMEOUT"
    cause: str
    status: Status | None  # when the NAA answered with a non-zero return code
    index: int | None  # wait_any only
    statuses: list[Status | None]  # wait_all only
    errors: list[int]  # wait_all only

class Handle:
    """A libnaa handle over buffer-protocol parameters (naa_create_attr)."""
    def __init__(
        self,
        function_code: int,
        inputs: Sequence[Buffer],
        outputs: Sequence[Buffer],
        *,
        single_send: bool | Sequence[bool] = False,
        naa: str | None = None,
        transport: str | None = None,
        timeout_ms: int | None = None,
        progress: str | None = None,
        auth_key: str | None = None,
        local_ip: str | None = None,
        device: str | None = None,
        pacing_us: int | None = None,
        params: Mapping[str, object] | Iterable[str] | None = None,
    ) -> None: ...
    def invoke(self) -> None: ...
    def test(self) -> Status | None: ...
    def wait(self, timeout: float | None = None) -> Status | None: ...
    def cancel(self) -> None: ...
    def info(self) -> dict[str, str | int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> Handle: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool: ...
    @property
    def closed(self) -> bool: ...
    @property
    def function_code(self) -> int: ...
    @property
    def inputs(self) -> tuple[Buffer, ...]: ...
    @property
    def outputs(self) -> tuple[Buffer, ...]: ...

def version() -> str: ...
def strerror(code: int) -> str: ...
def rc_string(naa_return_code: int) -> str: ...
def last_error(handle: Handle | None = None) -> tuple[int, str]: ...
def stats() -> dict[str, object]: ...
def stats_energy() -> dict[str, object]: ...
def wait_any(handles: Sequence[Handle]) -> tuple[int, Status] | None: ...
def wait_all(handles: Sequence[Handle]) -> list[Status | None]: ...
