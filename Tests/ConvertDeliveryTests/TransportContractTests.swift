import ConvertTesting
import ConvertTransport
import ConvertURLSessionTransport
import Foundation
import Testing

@Suite struct TransportContractTests {
    @Test func theURLSessionTransportKeepsTheTransportContract() async throws {
        try await HTTPTransportContract.verify(URLSessionTransport())
    }

    @Test func anUnstubbedRequestFailsLoudly() async throws {
        let transport = StubTransport()
        let url = try #require(URL(string: "https://example.invalid/track"))
        await #expect(throws: StubTransport.Unstubbed.self) {
            _ = try await transport.send(HTTPRequest(method: .post, url: url))
        }
        #expect(transport.requests.count == 1)
        transport.setResponder { _ in HTTPResponse(status: 204) }
        #expect(try await transport.send(HTTPRequest(method: .get, url: url)).status == 204)
    }
}
