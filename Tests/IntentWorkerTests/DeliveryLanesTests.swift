import Foundation
import IntentAMQP
import Synchronization
import Testing

@testable import IntentWorker

/// The two lanes a worker's deliveries wait in for a slot.
@Suite struct DeliveryLanesTests {
    static func delivery(_ tag: UInt64, high: Bool) -> Delivery {
        Delivery(
            tag: DeliveryTag(generation: 1, value: tag), exchange: "intents", routingKey: high ? "SendMessage.high" : "SendMessage",
            redelivered: false, body: [], messageID: "\(tag)", type: "SendMessage", userID: nil, replyTo: nil, correlationID: nil,
            deliveryCount: nil, headers: [:])
    }

    /// What the runners ran, in order, and how many ran at once at most.
    final class Runs: Sendable {
        private let state = Mutex(
            (order: [UInt64](), now: 0, most: 0, waiting: [(count: Int, continuation: CheckedContinuation<Void, Never>)]()))
        var order: [UInt64] { state.withLock { $0.order } }
        var most: Int { state.withLock { $0.most } }
        var now: Int { state.withLock { $0.now } }

        func begin(_ delivery: Delivery) {
            let ready = state.withLock { state in
                state.order.append(delivery.tag.value)
                state.now += 1
                state.most = max(state.most, state.now)
                let begun = state.order.count
                defer { state.waiting.removeAll { $0.count <= begun } }
                return state.waiting.filter { $0.count <= begun }.map(\.continuation)
            }
            for continuation in ready { continuation.resume() }
        }

        func end() { state.withLock { $0.now -= 1 } }

        /// Returns once `count` runs have begun.
        func begun(_ count: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let already = state.withLock { state in
                    if state.order.count >= count { return true }
                    state.waiting.append((count, continuation))
                    return false
                }
                if already { continuation.resume() }
            }
        }
    }

    @Test func highPriorityDeliveriesGoFirstAndOneNormalOnePassesAfterEveryWeightOfThem() async {
        let lanes = DeliveryLanes(runners: 1, weight: 2)
        for tag in UInt64(1)...3 { lanes.add(Self.delivery(tag, high: false)) }
        for tag in UInt64(11)...15 { lanes.add(Self.delivery(tag, high: true)) }
        let runs = Runs()
        lanes.start { delivery in
            runs.begin(delivery)
            runs.end()
        }
        lanes.finish()
        await lanes.drained()
        #expect(runs.order == [11, 12, 1, 13, 14, 2, 15, 3], "two urgent, one normal, while both wait; then the rest in order")
    }

    @Test func noMoreThanItsRunnersRunAtOnceAndWhatIsHeldWaitsForOneToBeFree() async throws {
        let lanes = DeliveryLanes(runners: 2)
        let runs = Runs()
        let gate = WorkerServiceTests.Gate()
        lanes.start { delivery in
            runs.begin(delivery)
            // Held until the test opens the gate: the third delivery has no runner meanwhile.
            await gate.wait()
            runs.end()
        }
        for tag in UInt64(1)...5 { lanes.add(Self.delivery(tag, high: false)) }
        await runs.begun(2)
        #expect(lanes.running == 2)
        #expect(runs.order.count == 2, "the other three wait while both runners are busy")
        gate.open()
        lanes.finish()
        await lanes.drained()
        #expect(runs.order.sorted() == [1, 2, 3, 4, 5])
        #expect(runs.most == 2)
        #expect(lanes.running == 0)
    }

    @Test func deliveriesAddedFromManyThreadsWhileRunnersEndAreAllRun() async {
        // A runner that finds the lanes empty ends in the same step as it looks; a delivery added in between
        // starts another. Were the two apart, a delivery added just then would be held with no runner to take it.
        let lanes = DeliveryLanes(runners: 3)
        let runs = Runs()
        lanes.start { delivery in
            runs.begin(delivery)
            await Task.yield()  // a suspension, so that runs overlap and the bound has something to hold
            runs.end()
        }
        let threads = 4
        let each = 5_000
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            for index in 0..<each {
                lanes.add(Self.delivery(UInt64(thread * each + index), high: index % 7 == 0))
                if index % 64 == 0 { sched_yield() }  // now and then give the runners the core, to catch up and end
            }
        }
        lanes.finish()
        await lanes.drained()
        #expect(runs.order.count == threads * each)
        #expect(Set(runs.order).count == threads * each)
        #expect(runs.most <= 3)
    }

    @Test func drainedWaitsForTheLastRunToEnd() async throws {
        let lanes = DeliveryLanes(runners: 4)
        let runs = Runs()
        let gate = WorkerServiceTests.Gate()
        let ended = Mutex(false)
        lanes.start { delivery in
            runs.begin(delivery)
            await gate.wait()
            runs.end()
            ended.withLock { $0 = true }
        }
        lanes.add(Self.delivery(1, high: false))
        lanes.finish()
        let drained = Task {
            await lanes.drained()
            return ended.withLock { $0 }
        }
        await runs.begun(1)
        gate.open()
        #expect(await drained.value, "drained only once the run in progress has ended")
    }

    /// What the runners' body holds: the worker, in a worker's lanes.
    final class Held: Sendable {}

    @Test func theRunnersBodyIsLetGoOnceTheLanesAreDrained() async {
        // A worker's lanes run `process` on the worker: kept after the end, the body would keep the worker
        // (its ledger's database, its connection) alive for as long as the lanes, which the worker holds.
        let lanes = DeliveryLanes(runners: 2)
        var held: Held? = Held()
        weak let watched = held
        lanes.start { [held] _ in _ = held }
        held = nil
        lanes.add(Self.delivery(1, high: false))
        #expect(watched != nil, "held while the lanes may still run")
        lanes.finish()
        await lanes.drained()
        #expect(watched == nil)
    }
}

/// How a worker tells whether another still holds a kept intent it took.
@Suite struct KeptTakerTests {
    @Test func aTakerHoldsWhileItsProcessRunsAndALaterProcessWithItsIDIsToldApart() throws {
        let me = KeptTaker.current
        #expect(KeptTaker.holds(me.name, takenAt: 0), "this process")
        #expect(!KeptTaker.holds("\(me.host) \(me.pid) other", takenAt: 0), "an earlier process with this id, which ended")
        // A process of this host that has ended: a child that exited.
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/true")
        try child.run()
        child.waitUntilExit()
        #expect(!KeptTaker.holds("\(me.host) \(child.processIdentifier) x", takenAt: 0))
        #expect(KeptTaker.holds("\(me.host) 1 x", takenAt: 0), "a process that runs (init)")
        // Another host's processes cannot be looked at: held for the lease.
        let now = Date().timeIntervalSince1970
        #expect(KeptTaker.holds("elsewhere 7 x", takenAt: now))
        #expect(!KeptTaker.holds("elsewhere 7 x", takenAt: now - KeptTaker.otherHostLease - 1))
        #expect(!KeptTaker.holds("not a name", takenAt: now))
    }
}
