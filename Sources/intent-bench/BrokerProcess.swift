import Foundation

/// The local broker's OS process, found by the TCP port it listens on, so its
/// CPU can be told apart from this process's and from anything else on the machine.
struct BrokerProcess: Sendable {
    let pid: Int32

    /// The process listening on `port` of this machine, when `host` is local
    /// and /proc lets us see it; nil otherwise.
    static func find(host: String, port: Int) -> BrokerProcess? {
        guard ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased()) else { return nil }
        let inodes = listeningInodes(port: port)
        guard !inodes.isEmpty,
            let processes = try? FileManager.default.contentsOfDirectory(atPath: "/proc")
        else { return nil }
        for entry in processes {
            guard let pid = Int32(entry),
                let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
            else { continue }
            for descriptor in descriptors {
                if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\(descriptor)"),
                    target.hasPrefix("socket:["), inodes.contains(String(target.dropFirst(8).dropLast()))
                {
                    return BrokerProcess(pid: pid)
                }
            }
        }
        return nil
    }

    /// Socket inodes in state LISTEN (0A) on `port`, from /proc/net/tcp and tcp6.
    private static func listeningInodes(port: Int) -> Set<String> {
        let portHex = String(format: "%04X", port)
        var inodes: Set<String> = []
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                let fields = line.split(separator: " ")
                guard fields.count > 9, fields[1].hasSuffix(":" + portHex), fields[3] == "0A" else { continue }
                inodes.insert(String(fields[9]))
            }
        }
        return inodes
    }

    /// User + system CPU seconds the process has used so far (nil once it is gone).
    var cpuSeconds: Double? {
        guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = text.lastIndex(of: ")")
        else { return nil }
        // Fields after "(comm)": state is field 3, utime 14 and stime 15.
        let fields = text[text.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}
