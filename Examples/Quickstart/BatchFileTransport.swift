import ConvertSwiftSDK
import ConvertTransport
import Foundation

/// A transport that "delivers" every request by appending its body as one line to a file and
/// answering 200: the local endpoint of the quickstart. Any `HTTPTransport` plugs in the same way.
final class BatchFileTransport: HTTPTransport, @unchecked Sendable {
    // `handle` and `batches` are guarded by `lock`.
    private let lock = NSLock()
    private let handle: FileHandle?
    private var batches = 0

    init(file: URL) {
        _ = FileManager.default.createFile(atPath: file.path, contents: nil, attributes: [.posixPermissions: 0o600])
        handle = try? FileHandle(forWritingTo: file)
    }

    var batchCount: Int { lock.withLock { batches } }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        lock.withLock {
            if let body = request.body {
                handle?.write(body)
                handle?.write(Data("\n".utf8))
            }
            batches += 1
        }
        return HTTPResponse(status: 200)
    }
}
