import Foundation
import Synchronization
import Testing

@testable import IntentAMQP

/// The names the project's threads show to the system (`top -H`, `ps -T`, `perf`), where Linux keeps 15 bytes.
@Suite struct ThreadNameTests {
    /// Runs `body` on a thread made by `Thread.named(name)` and returns what it saw there.
    func onNamedThread(_ name: String, _ body: @escaping @Sendable () -> String) -> String {
        let seen = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.named(name) {
            seen.withLock { $0 = body() }
            done.signal()
        }.start()
        done.wait()
        return seen.withLock { $0 } ?? ""
    }

    /// Set through `Thread.name` before `start()`, no name reaches the system on Linux.
    @Test func aShortNameReachesTheSystemWhole() {
        #expect(onNamedThread("iq-io work") { Thread.systemName } == "iq-io work")
    }

    /// Set through `Thread.name` even by the thread itself, a name this long is refused by the system.
    @Test func aLongNameReachesTheSystemAsItsFirstFifteenBytes() {
        let name = "intentqueue.io.intents.work.high"
        let seen = onNamedThread(name) { Thread.systemName }
        #expect(seen == "intentqueue.io.")
    }

    @Test func aNameIsCutOnlyBetweenCharacters() {
        // "é" is two bytes: after "iq-io reservé" (14 bytes), the fifteenth would split the next one.
        let name = "iq-io reservéé-queue"
        let seen = onNamedThread(name) { Thread.systemName }
        #expect(seen == "iq-io reservé")
        #expect(onNamedThread("another") { Thread.setSystemName(name) } == "iq-io reservé")
    }
}
