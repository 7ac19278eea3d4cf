import Foundation
import Synchronization

/// Every process the tests start, ended when the test process exits — even
/// when a test's asynchronous tear-down has not run by then — so no worker is
/// left to reconnect to a later run's broker.
enum ProcessReaper {
    private static let pids = Mutex<Set<Int32>>([])
    private static let installed = Mutex(false)

    static func track(_ pid: Int32) {
        let install = installed.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        if install { atexit { ProcessReaper.endAll() } }
        _ = pids.withLock { $0.insert(pid) }
    }

    static func forget(_ pid: Int32) {
        _ = pids.withLock { $0.remove(pid) }
    }

    static func endAll() {
        for pid in pids.withLock({ $0 }) { kill(pid, SIGKILL) }
    }
}
