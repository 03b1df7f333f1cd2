import ConvertCore
import ConvertEnvironment
import Foundation

extension ConvertSwiftSDK {
    /// Starts an SDK that answers from a ``DecisionSnapshot`` taken on another SDK (a server's),
    /// on the default wiring: no config fetch, ready without network, tracking delivered to the
    /// snapshot's account and project (leave the configuration's SDK key empty, the default).
    /// See ``init(snapshot:configuration:ports:)`` for what it answers.
    ///
    /// ```swift
    /// let sdk = ConvertSwiftSDK(snapshot: try DecisionSnapshot(jsonData: body))
    /// try await sdk.ready()
    /// ```
    public convenience init(snapshot: DecisionSnapshot,
                            configuration: ConvertConfiguration = ConvertConfiguration(sdkKey: "", persistence: .memory),
                            logSink: any LogSink = StandardErrorLogSink()) {
        self.init(snapshot: snapshot, configuration: configuration,
                  ports: .live(configuration, logSink: logSink, directData: snapshot.configData()))
    }
}
