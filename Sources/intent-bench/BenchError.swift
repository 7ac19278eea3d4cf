import Foundation
import IntentAMQP
import IntentCLI

/// Why a benchmark run stopped, with the exit code it ends the process with.
struct BenchError: Error, CustomStringConvertible {
    var description: String
    var exitCode: Int32

    /// The broker cannot be reached (exit 69).
    static func unavailable(_ reason: String) -> BenchError {
        BenchError(description: reason, exitCode: ExitCode.unavailable)
    }

    /// A phase did not finish in time or its result is wrong (exit 1).
    static func failed(_ reason: String) -> BenchError {
        BenchError(description: reason, exitCode: ExitCode.failed)
    }

    /// The run was stopped by `signal` (exit 128 + the signal's number, as a shell reports it).
    static func interrupted(_ signal: Int32) -> BenchError {
        let name = signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "signal \(signal)"
        return BenchError(description: "interrupted by \(name)", exitCode: 128 + signal)
    }

    /// Wraps what a phase's thread or set-up threw, naming the phase.
    static func from(_ error: any Error, phase: String) -> BenchError {
        if let bench = error as? BenchError { return bench }
        if let amqp = error as? AMQPError, amqp.kind == .connection {
            return .unavailable("\(phase): broker unreachable: \(amqp)")
        }
        return .failed("\(phase): \(error)")
    }
}
