import IntentAMQP

extension AMQPConnection {
    /// The next delivery, confirm or return, checking the phase's deadline
    /// while nothing arrives.
    func nextEvent(control: PhaseControl, _ doing: @autoclosure () -> String) throws -> AMQPConnection.Event {
        while true {
            if let event = try nextEvent(timeout: min(0.2, max(0.001, control.remaining))) { return event }
            try control.check(doing())
        }
    }
}
