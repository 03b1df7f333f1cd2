#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `send`'s flags for a fake server's reply: a client that already closed costs an `EPIPE`, not
/// the test process (Darwin has no such flag; its sockets take `SO_NOSIGPIPE` instead).
public let sendWithoutSIGPIPE: Int32 = {
    #if canImport(Darwin)
    0
    #else
    Int32(MSG_NOSIGNAL)
    #endif
}()
