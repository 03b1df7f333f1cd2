// Documentation coverage from symbol graphs: counts, per module, the public declarations written
// in this repository and those of them without a doc comment; lists the undocumented ones and
// exits 1 when there is any.
//
//   swift .ci/doc-coverage.swift GRAPH_DIR [--report-only]
//
// GRAPH_DIR holds one module's graphs per subdirectory or all of them flat (`M.symbols.json` and
// `M@Extended.symbols.json`, both counted for M). Members without a source location are
// synthesized (`!=`, `hashValue` of a raw-value enum) and not counted. A member that implements a
// protocol requirement without a comment of its own carries the requirement's comment in the
// graph and counts as documented, as DocC shows it.
import Foundation

let arguments = CommandLine.arguments.dropFirst()
guard let directory = arguments.first(where: { !$0.hasPrefix("--") }) else {
    FileHandle.standardError.write(Data("usage: doc-coverage GRAPH_DIR [--report-only]\n".utf8))
    exit(2)
}
let reportOnly = arguments.contains("--report-only")
let root = URL(fileURLWithPath: FileManager.default.currentDirectoryPath)

struct Missing { let place: String; let kind: String; let name: String }
struct Tally { var declared = 0; var documented = 0; var missing: [Missing] = []; var seen: Set<String> = [] }
var modules: [String: Tally] = [:]

let files = (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? [])
    .filter { $0.hasSuffix(".symbols.json") }.sorted()
guard !files.isEmpty else {
    FileHandle.standardError.write(Data("doc-coverage: no symbol graphs in \(directory)\n".utf8))
    exit(2)
}

for file in files {
    let name = (file as NSString).lastPathComponent
    let module = String(name.dropLast(".symbols.json".count).split(separator: "@")[0])
    let data = try Data(contentsOf: URL(fileURLWithPath: directory).appendingPathComponent(file))
    guard let graph = try JSONSerialization.jsonObject(with: data) as? [String: Any],
          let symbols = graph["symbols"] as? [[String: Any]] else { continue }
    var tally = modules[module] ?? Tally()
    for symbol in symbols {
        guard let location = symbol["location"] as? [String: Any], let uri = location["uri"] as? String,
              let identifier = (symbol["identifier"] as? [String: Any])?["precise"] as? String,
              tally.seen.insert(identifier).inserted else { continue }
        tally.declared += 1
        let lines = ((symbol["docComment"] as? [String: Any])?["lines"] as? [[String: Any]]) ?? []
        if lines.contains(where: { !(($0["text"] as? String) ?? "").trimmingCharacters(in: .whitespaces).isEmpty }) {
            tally.documented += 1
            continue
        }
        var path = URL(string: uri)?.path ?? uri
        if path.hasPrefix(root.path + "/") { path.removeFirst(root.path.count + 1) }
        let line = ((location["position"] as? [String: Any])?["line"] as? Int ?? 0) + 1
        let kind = ((symbol["kind"] as? [String: Any])?["identifier"] as? String ?? "").replacingOccurrences(of: "swift.", with: "")
        let title = (symbol["pathComponents"] as? [String] ?? []).joined(separator: ".")
        tally.missing.append(Missing(place: "\(path):\(line)", kind: kind, name: title))
    }
    modules[module] = tally
}

func percent(_ part: Int, _ whole: Int) -> String {
    whole == 0 ? "100.0%" : String(format: "%.1f%%", Double(part) * 100 / Double(whole))
}
func padded(_ text: String, _ width: Int) -> String { text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0) }

var total = Tally()
print(padded("module", 28) + padded("public", 8) + padded("documented", 12) + "coverage")
for (module, tally) in modules.sorted(by: { $0.key < $1.key }) {
    print(padded(module, 28) + padded("\(tally.declared)", 8) + padded("\(tally.documented)", 12)
          + percent(tally.documented, tally.declared))
    total.declared += tally.declared
    total.documented += tally.documented
    total.missing += tally.missing
}
print(padded("total", 28) + padded("\(total.declared)", 8) + padded("\(total.documented)", 12)
      + percent(total.documented, total.declared))

if !total.missing.isEmpty {
    print("\n\(total.missing.count) public declarations without a doc comment:")
    for item in total.missing.sorted(by: { $0.place.localizedStandardCompare($1.place) == .orderedAscending }) {
        print("\(item.place): \(item.kind) \(item.name)")
    }
    if !reportOnly { exit(1) }
}
