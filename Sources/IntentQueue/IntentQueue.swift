// The library a worker's author imports: intents and handlers (IntentKit),
// app databases with once-only effects (IntentStore), the broker (IntentAMQP)
// and the runtime (IntentWorker), with `Worker.serve`, the one entry point.
@_exported import Foundation
@_exported import IntentAMQP
@_exported import IntentKit
@_exported import IntentStore
@_exported import IntentWorker
