# cython: language_level=3
"""Arrow data handed to engines that may free it on their own threads after the
interpreter began to exit.

Buffers rcfmt builds over numpy arrays (``pyarrow.py_buffer``) take the GIL when their
last reference goes. Polars frees the frames a ``scan_rcfmt`` stream handed it on its
own (tokio) threads, whenever its pipeline lets them go -- possibly after Python began
to finalize, when a thread asking for the GIL is ended (Python 3.11's ``pthread_exit``;
the unwinding meets pyarrow's ``noexcept`` destructor and the process aborts:
"terminate called without an active exception", 2 runs in 40).

:func:`exit_safe_stream` wraps a table's Arrow C stream (``__arrow_c_stream__``) so that
every array it yields has a release callback of rcfmt's: once :func:`stop_releases` ran
(rcfmt's exit hook), a release frees nothing (the process is ending: its memory goes with
it) and so never asks for the GIL. :func:`stop_releases` waits (the GIL released, at most
``timeout`` seconds) for releases already under way, so that none is left blocked on the
GIL when finalization begins. Buffers, children and dictionaries are the producer's,
untouched: the wrapping is zero-copy.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_New
from libc.stdint cimport int64_t
from libc.stdlib cimport free, malloc
from libc.errno cimport ENOMEM

__all__ = ["exit_safe_stream", "stop_releases", "releases_stopped"]


cdef extern from *:
    """
    #include <time.h>
    struct ArrowSchema;
    struct ArrowArray {
      int64_t length; int64_t null_count; int64_t offset; int64_t n_buffers; int64_t n_children;
      const void** buffers; struct ArrowArray** children; struct ArrowArray* dictionary;
      void (*release)(struct ArrowArray*); void* private_data;
    };
    struct ArrowArrayStream {
      int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
      int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
      const char* (*get_last_error)(struct ArrowArrayStream*);
      void (*release)(struct ArrowArrayStream*);
      void* private_data;
    };
    static int rcfmt_exiting = 0;
    static long rcfmt_releasing = 0;
    static inline int rcfmt_exit_flag(void) { return __atomic_load_n(&rcfmt_exiting, __ATOMIC_SEQ_CST); }
    static inline void rcfmt_set_exit_flag(void) { __atomic_store_n(&rcfmt_exiting, 1, __ATOMIC_SEQ_CST); }
    static inline long rcfmt_releases(void) { return __atomic_load_n(&rcfmt_releasing, __ATOMIC_SEQ_CST); }
    static inline void rcfmt_release_begins(void) { __atomic_add_fetch(&rcfmt_releasing, 1, __ATOMIC_SEQ_CST); }
    static inline void rcfmt_release_ends(void) { __atomic_sub_fetch(&rcfmt_releasing, 1, __ATOMIC_SEQ_CST); }
    static inline void rcfmt_nap_ms(void) { struct timespec t = {0, 1000000}; nanosleep(&t, NULL); }
    """
    struct ArrowSchema:
        pass

    struct ArrowArray:
        int64_t length
        int64_t null_count
        int64_t offset
        int64_t n_buffers
        int64_t n_children
        const void** buffers
        ArrowArray** children
        ArrowArray* dictionary
        void (*release)(ArrowArray*) noexcept nogil
        void* private_data

    struct ArrowArrayStream:
        int (*get_schema)(ArrowArrayStream*, ArrowSchema*) noexcept nogil
        int (*get_next)(ArrowArrayStream*, ArrowArray*) noexcept nogil
        const char* (*get_last_error)(ArrowArrayStream*) noexcept nogil
        void (*release)(ArrowArrayStream*) noexcept nogil
        void* private_data

    int rcfmt_exit_flag() noexcept nogil
    void rcfmt_set_exit_flag() noexcept nogil
    long rcfmt_releases() noexcept nogil
    void rcfmt_release_begins() noexcept nogil
    void rcfmt_release_ends() noexcept nogil
    void rcfmt_nap_ms() noexcept nogil


cdef void _release_array(ArrowArray* array) noexcept nogil:
    """The wrapped array's release: the producer's, unless rcfmt's exit hook ran."""
    cdef ArrowArray* inner = <ArrowArray*>array.private_data
    array.release = NULL
    rcfmt_release_begins()  # (before the flag is read: stop_releases waits for it)
    if not rcfmt_exit_flag():
        if inner.release != NULL:
            inner.release(inner)
        free(inner)
    rcfmt_release_ends()  # (after the exit hook ran: the producer's data is left for the process's end)


cdef struct Wrapped:
    ArrowArrayStream inner  # (the producer's stream, moved here)
    bint out_of_memory  # (the last get_next failed here, not in the producer)


cdef int _get_schema(ArrowArrayStream* stream, ArrowSchema* out) noexcept nogil:
    cdef ArrowArrayStream* inner = &(<Wrapped*>stream.private_data).inner
    return inner.get_schema(inner, out)


cdef int _get_next(ArrowArrayStream* stream, ArrowArray* out) noexcept nogil:
    cdef Wrapped* wrapped = <Wrapped*>stream.private_data
    cdef int code = wrapped.inner.get_next(&wrapped.inner, out)
    cdef ArrowArray* moved
    wrapped.out_of_memory = False
    if code != 0 or out.release == NULL:  # (an error, or the end of the stream)
        return code
    moved = <ArrowArray*>malloc(sizeof(ArrowArray))
    if moved == NULL:
        out.release(out)
        wrapped.out_of_memory = True
        return ENOMEM
    moved[0] = out[0]  # (moved: the C data interface lets a struct be copied bitwise)
    out.private_data = moved
    out.release = _release_array  # (buffers and children stay the producer's)
    return 0


cdef const char* _get_last_error(ArrowArrayStream* stream) noexcept nogil:
    cdef Wrapped* wrapped = <Wrapped*>stream.private_data
    if wrapped.out_of_memory:
        return "rcfmt: out of memory wrapping an array of the stream"
    return wrapped.inner.get_last_error(&wrapped.inner)


cdef void _release_stream(ArrowArrayStream* stream) noexcept nogil:
    cdef Wrapped* wrapped = <Wrapped*>stream.private_data
    stream.release = NULL
    if wrapped.inner.release != NULL:
        wrapped.inner.release(&wrapped.inner)
    free(wrapped)


cdef void _capsule_release(object capsule) noexcept:
    cdef ArrowArrayStream* stream = <ArrowArrayStream*>PyCapsule_GetPointer(capsule, "arrow_array_stream")
    if stream.release != NULL:  # (not moved out by a consumer)
        stream.release(stream)
    free(stream)


cdef class ExitSafeStream:
    """An Arrow C stream exporter (``__arrow_c_stream__``) of ``data`` (any object that
    exports one: a pyarrow Table or RecordBatch) whose arrays never take the GIL to be
    released once :func:`stop_releases` ran."""
    cdef object data

    def __init__(self, data):
        self.data = data

    def __arrow_c_stream__(self, requested_schema=None):
        source = self.data.__arrow_c_stream__(requested_schema)
        if not PyCapsule_IsValid(source, "arrow_array_stream"):
            raise TypeError("__arrow_c_stream__ returned something other than an arrow_array_stream capsule")
        cdef ArrowArrayStream* given = <ArrowArrayStream*>PyCapsule_GetPointer(source, "arrow_array_stream")
        cdef Wrapped* wrapped = <Wrapped*>malloc(sizeof(Wrapped))
        cdef ArrowArrayStream* outer = <ArrowArrayStream*>malloc(sizeof(ArrowArrayStream))
        if wrapped == NULL or outer == NULL:
            free(wrapped)
            free(outer)
            raise MemoryError()
        wrapped.inner = given[0]  # (moved out of pyarrow's capsule, which then releases nothing)
        wrapped.out_of_memory = False
        given.release = NULL
        outer.get_schema = _get_schema
        outer.get_next = _get_next
        outer.get_last_error = _get_last_error
        outer.release = _release_stream
        outer.private_data = wrapped
        try:
            return PyCapsule_New(outer, "arrow_array_stream", _capsule_release)
        except BaseException:
            _release_stream(outer)
            free(outer)
            raise


def exit_safe_stream(data) -> ExitSafeStream:
    """``data`` (a pyarrow Table or RecordBatch) as an Arrow C stream exporter whose arrays
    are released without the GIL once rcfmt's exit hook ran (zero-copy)."""
    return ExitSafeStream(data)


def stop_releases(double timeout=1.0) -> bool:
    """From now on, arrays of :func:`exit_safe_stream` free nothing when released (also
    those of streams made later, in exit handlers that run after rcfmt's: their memory
    stays until the process ends); wait
    (the GIL released, at most ``timeout`` seconds) for releases under way. True when
    none is left."""
    cdef long naps = <long>(timeout * 1000)
    rcfmt_set_exit_flag()
    with nogil:
        while rcfmt_releases() and naps > 0:
            rcfmt_nap_ms()
            naps -= 1
    return rcfmt_releases() == 0


def releases_stopped() -> bool:
    """Whether :func:`stop_releases` ran in this process."""
    return bool(rcfmt_exit_flag())
