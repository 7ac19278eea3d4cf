import Foundation
import IntentKit
import IntentTesting
import Synchronization
import Testing

/// The shipped test double: the real worker on the in-memory transport, as a
/// user's handler tests drive it.
@Suite(.timeLimit(.minutes(10)))
struct TestWorkerTests {
    /// "Water the plants in the kitchen": a room chosen among three, a confirmation for many litres.
    struct WaterPlants: Intent {
        static let typeName = "WaterPlants"
        @Parameter("Which room?", choices: { _ in ["Kitchen", "Hall", "Study"] }) var room: String
        @Parameter("How many litres?", in: 1...50) var litres: Int
    }

    final class Watered: Sendable {
        let rooms = Mutex<[String]>([])
    }

    struct WaterPlantsHandler: IntentHandler {
        let watered: Watered

        func confirm(_ intent: WaterPlants, context: IntentContext) async throws {
            if intent.litres > 20 { try context.requestConfirmation("Pour \(intent.litres) litres in the \(intent.room)?") }
        }

        func handle(_ intent: WaterPlants, context: IntentContext) async throws -> IntentResponse {
            watered.rooms.withLock { $0.append(intent.room) }
            return .success("Watered the \(intent.room)", payload: ["litres": .number(Double(intent.litres))])
        }
    }

    /// A room said by its first letter: "k" is the kitchen or the kids' room.
    struct Room: ParameterValue, Hashable {
        var name: String
        static func resolve(_ spoken: String, context: IntentContext) async throws -> ParameterResult<Room> {
            if spoken.lowercased() == "k" {
                return .disambiguation([ParameterOption(Room(name: "Kitchen"), title: "Kitchen"), ParameterOption(Room(name: "Kids"), title: "Kids")])
            }
            return .success(Room(name: spoken))
        }
        var spoken: String { name }
        var displayValue: JSONValue { .string(name) }
    }

    struct WaterRooms: Intent {
        static let typeName = "WaterRooms"
        @Parameter("Which rooms?") var rooms: [Room]
    }

    struct WaterRoomsHandler: IntentHandler {
        let watered: Watered
        func handle(_ intent: WaterRooms, context: IntentContext) async throws -> IntentResponse {
            watered.rooms.withLock { $0 += intent.rooms.map(\.name) }
            return .success("Watered")
        }
    }

    /// A question about one element of a list, answered with one value, used to replace the whole list: the other
    /// rooms said were dropped. The answer replaces that element only (`IntentEnvelope.applying`).
    @Test func anAnswerAboutOneElementOfAListKeepsTheOthers() async throws {
        let watered = Watered()
        let worker = try TestWorker(WaterRoomsHandler(watered: watered))
        let asked = try await worker.submit("WaterRooms", ["rooms": ["k", "Hall"]], id: "r-1")
        #expect(asked.state == .needsInput && asked.resolutions?.first { $0.result.needsInput }?.index == 0, "\(asked)")
        let done = try await worker.answer("r-1", ["rooms": "Kitchen"])
        #expect(done.state == .success, "\(done)")
        #expect(watered.rooms.withLock { $0 } == ["Kitchen", "Hall"])
        // The same list typed on a command line ("k,Hall", read leniently).
        let typed = try await worker.submit("WaterRooms", ["rooms": "k,Hall"], id: "r-2", lenient: true)
        #expect(typed.state == .needsInput, "\(typed)")
        #expect(try await worker.answer("r-2", ["rooms": "Kitchen"], lenient: true).state == .success)
        #expect(watered.rooms.withLock { $0 } == ["Kitchen", "Hall", "Kitchen", "Hall"])
        // An answer of a whole list (or text with commas, a command line's list) still replaces it.
        let applied = IntentEnvelope.applying(
            ["rooms": "Kitchen,Study"], to: ["rooms": ["k", "Hall"]], asked: [ParameterResolution("rooms", index: 0, .disambiguation([]))])
        #expect(applied == ["rooms": "Kitchen,Study"])
        let whole = IntentEnvelope.applying(
            ["rooms": ["Study", "Hall", "Attic"]], to: ["rooms": ["k", "Hall"]], asked: [ParameterResolution("rooms", index: 0, .disambiguation([]))])
        #expect(whole == ["rooms": ["Study", "Hall", "Attic"]])
        // A one-element JSON list, answered with one value, stays a list (a strict decode needs one).
        _ = try await worker.submit("WaterRooms", ["rooms": ["k"]], id: "r-3")
        #expect(try await worker.answer("r-3", ["rooms": "Kitchen"]).state == .success)
        // Typed text whose every element was asked about is answered whole, as given (the turn's history shows that).
        let single = IntentEnvelope.applying(
            ["rooms": "Kitchen"], to: ["rooms": "k"], asked: [ParameterResolution("rooms", index: 0, .disambiguation([]))])
        #expect(single == ["rooms": "Kitchen"])
        await worker.stop()
    }

    @Test func aTypedIntentIsHandledAndItsEventsAreThere() async throws {
        let watered = Watered()
        let worker = try TestWorker(WaterPlantsHandler(watered: watered))
        var intent = WaterPlants()
        intent.room = "Hall"
        intent.litres = 2
        let done = try await worker.submit(intent, id: "w-1")
        #expect(done.state == .success)
        #expect(done.response?.payload == ["litres": 2])
        #expect(worker.events("w-1").map(\.state) == [.inProgress, .success])
        #expect(watered.rooms.withLock { $0 } == ["Hall"])
        await worker.stop()
    }

    @Test func aQuestionIsAnsweredThenAConfirmationIsGivenOrRefused() async throws {
        let watered = Watered()
        let worker = try TestWorker(WaterPlantsHandler(watered: watered))
        let asked = try await worker.submit("WaterPlants", ["litres": 30], id: "w-2")
        #expect(asked.state == .needsInput)
        #expect(asked.resolutions?.first { $0.parameter == "room" }?.prompt == "Which room?")

        let confirm = try await worker.answer("w-2", ["room": "kitchen"])
        #expect(confirm.resolutions?.first { $0.parameter == IntentPipeline.wholeIntent }?.prompt == "Pour 30 litres in the Kitchen?")
        #expect(try await worker.confirm("w-2").state == .success)

        _ = try await worker.submit("WaterPlants", ["room": "Study", "litres": 40], id: "w-3")
        #expect(try await worker.deny("w-3").response?.code == FailureCode.denied)
        #expect(watered.rooms.withLock { $0 } == ["Kitchen"])
        await worker.stop()
    }

    @Test func aCancelEndsAWaitingIntentAndAnAnswerToNothingIsRefused() async throws {
        let worker = try TestWorker(WaterPlantsHandler(watered: Watered()))
        _ = try await worker.submit("WaterPlants", ["litres": 3], id: "w-4")
        #expect(try await worker.cancel("w-4").state == .canceled)
        await #expect(throws: TestWorker.Timeout.self) { try await worker.answer("never-submitted", ["room": "Hall"]) }
        await #expect(throws: TestWorker.Timeout.self) { try await worker.cancel("never-submitted") }
        await worker.stop()
    }

    @Test func commandLineParametersAreReadLenientlyOnlyWhenSaid() async throws {
        let worker = try TestWorker(WaterPlantsHandler(watered: Watered()))
        let strict = try await worker.submit("WaterPlants", ["room": "Hall", "litres": "2"], id: "w-5")
        #expect(strict.response?.code == FailureCode.invalidIntent)
        let lenient = try await worker.submit("WaterPlants", ["room": "Hall", "litres": "2"], id: "w-6", lenient: true)
        #expect(lenient.state == .success)
        await worker.stop()
    }
}
