import Synchronization
import Testing

@testable import IntentKit

/// A logger's metadata: what it was made with, what `with` puts over it, and what each record carries.
@Suite struct LoggerTests {
    /// A logger at `level` whose records are kept, and the records.
    func recording(level: Logger.Level = .info, metadata: [String: String] = [:]) -> (Logger, @Sendable () -> [Logger.Record]) {
        let records = Mutex<[Logger.Record]>([])
        let logger = Logger(label: "test", level: level, metadata: metadata) { record in records.withLock { $0.append(record) } }
        return (logger, { records.withLock { $0 } })
    }

    @Test func aRecordCarriesTheMetadataWithTheLaterOverTheEarlier() {
        let (base, records) = recording(metadata: ["component": "worker", "intent.id": "none"])
        let logger = base.with(["intent.id": "a-1", "intent.type": "SendMessage"]).with(pairs: ["intent.attempt": "1", "intent.attempt": "2"])
        logger.info("ran", metadata: ["intent.type": "OrderSoup", "extra": "x"])
        base.info("base")

        #expect(
            records().map(\.metadata) == [
                ["component": "worker", "intent.id": "a-1", "intent.type": "OrderSoup", "intent.attempt": "2", "extra": "x"],
                ["component": "worker", "intent.id": "none"],
            ])
        #expect(logger.metadata == ["component": "worker", "intent.id": "a-1", "intent.type": "SendMessage", "intent.attempt": "2"])
        #expect(logger[metadataKey: "intent.id"] == "a-1" && logger[metadataKey: "component"] == "worker")
        #expect(logger[metadataKey: "intent.attempt"] == "2" && logger[metadataKey: "missing"] == nil)
    }

    @Test func settingAKeyOrTheWholeMetadataReplacesWhatWasThere() {
        let (base, records) = recording(metadata: ["component": "worker"])
        var logger = base.with(pairs: ["intent.id": "a-1"])
        logger[metadataKey: "intent.id"] = nil
        logger[metadataKey: "component"] = "recorder"
        #expect(logger.metadata == ["component": "recorder"])
        logger.metadata = ["only": "this"]
        #expect(logger[metadataKey: "component"] == nil)
        logger.with(pairs: ["then": "that"]).warning("set")
        #expect(records().map(\.metadata) == [["only": "this", "then": "that"]])
    }

    @Test func aLoggerMadeAgainAndAgainFromItselfKeepsEachKeyOnce() {
        let (base, records) = recording(metadata: ["component": "worker"])
        var logger = base
        for attempt in 1...1_000 { logger = logger.with(pairs: ["intent.attempt": String(attempt), "round": String(attempt % 3)]) }
        logger.info("last")
        #expect(records().map(\.metadata) == [["component": "worker", "intent.attempt": "1000", "round": "1"]])
        #expect(logger.layeredCount <= 16)
    }

    @Test func aRecordBelowTheLevelIsDroppedBeforeItsMessageIsBuilt() {
        let (logger, records) = recording(level: .warning)
        let built = Atomic<Int>(0)
        func message() -> String {
            built.add(1, ordering: .relaxed)
            return "built"
        }
        logger.with(pairs: ["intent.id": "a-1"]).info(message())
        logger.error(message())
        #expect(built.load(ordering: .relaxed) == 1)
        #expect(records().map(\.message) == ["built"])
    }
}
