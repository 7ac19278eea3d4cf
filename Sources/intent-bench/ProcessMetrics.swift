import Foundation

/// Memory and CPU of this process (and of the whole machine) from /proc and getrusage.
struct ProcessMetrics: Sendable {
    /// VmRSS, bytes.
    var residentBytes: Int
    /// VmHWM: the highest VmRSS so far, bytes.
    var peakResidentBytes: Int
    /// User + system CPU seconds of this process.
    var cpuSeconds: Double
    /// Busy CPU seconds of the whole machine (every core, every process: the broker too).
    var machineBusySeconds: Double
    /// User + system CPU seconds of the local broker process, when it was found.
    var brokerCPUSeconds: Double?

    static func sample(broker: BrokerProcess? = nil) -> ProcessMetrics {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        return ProcessMetrics(
            residentBytes: kilobytes(of: "VmRSS:", in: status) * 1024,
            peakResidentBytes: kilobytes(of: "VmHWM:", in: status) * 1024,
            cpuSeconds: processCPUSeconds(),
            machineBusySeconds: machineBusySeconds(),
            brokerCPUSeconds: broker?.cpuSeconds)
    }

    private static func kilobytes(of field: String, in status: String) -> Int {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(field) }) else { return 0 }
        return line.split(separator: " ").compactMap { Int($0) }.first ?? 0
    }

    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1_000_000 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// CPU seconds of the calling thread.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time) == 0 else { return 0 }
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    /// From the first line of /proc/stat: user nice system idle iowait irq softirq steal, in clock ticks.
    private static func machineBusySeconds() -> Double {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
            let line = text.split(separator: "\n").first, line.hasPrefix("cpu ")
        else { return 0 }
        let ticks = line.split(separator: " ").dropFirst().compactMap { Double($0) }
        guard ticks.count >= 8 else { return 0 }
        let busy = ticks[0] + ticks[1] + ticks[2] + ticks[5] + ticks[6] + ticks[7]
        return busy / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// What happened between `start` and this sample.
    func since(_ start: ProcessMetrics) -> (cpuSeconds: Double, machineBusySeconds: Double, brokerCPUSeconds: Double?) {
        var broker: Double?
        if let now = brokerCPUSeconds, let then = start.brokerCPUSeconds { broker = now - then }
        return (cpuSeconds - start.cpuSeconds, machineBusySeconds - start.machineBusySeconds, broker)
    }

    static func megabytes(_ bytes: Int) -> Double { Double(bytes) / 1_048_576 }
}
