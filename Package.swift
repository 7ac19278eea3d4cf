// swift-tools-version:6.0
import PackageDescription

// ARCHITECTURE §6. Three libraries for users — IntentQueue (write and run a
// worker), IntentClient (submit, follow and answer intents), IntentTesting
// (test handlers without a broker) — and the five tools. The modules under
// them each know one thing; the example app and the benchmark are not products.
let package = Package(
    name: "IntentQueue",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "IntentQueue", targets: ["IntentQueue"]),
        .library(name: "IntentClient", targets: ["IntentClient"]),
        .library(name: "IntentTesting", targets: ["IntentTesting"]),
        .executable(name: "intent-worker", targets: ["intent-worker"]),
        .executable(name: "intent-submit", targets: ["intent-submit"]),
        .executable(name: "intent-status", targets: ["intent-status"]),
        .executable(name: "intent-bench", targets: ["intent-bench"]),
        .executable(name: "intent-gateway", targets: ["intent-gateway"]),
    ],
    targets: [
        // rabbitmq-c's headers and the functions IntentQueue calls, loaded by the first connection (dlopen) rather
        // than linked: a tool that never connects (a lookup in the store) does not load it, nor OpenSSL under it.
        // Its headers come from librabbitmq-dev; the library, at run time, from librabbitmq4.
        .target(name: "CRabbitMQ"),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // SQLite's default VFS, writing a log frame's header and page in one call and skipping a not-durable commit's sync (see its header).
        .target(name: "CStoreVFS", dependencies: ["CSQLite"]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),

        // The model, without I/O: intents, parameters, handlers, the pipeline, the wire format.
        .target(name: "IntentKit"),
        // The broker: the only importer of CRabbitMQ.
        .target(name: "IntentAMQP", dependencies: ["CRabbitMQ", "IntentKit"]),
        // SQLite: the only importer of CSQLite and CStoreVFS; app databases, ledgers, the status store.
        .target(name: "IntentStore", dependencies: ["CSQLite", "CStoreVFS", "IntentKit"]),
        // The runtime: the worker, the status recorder, metrics, services and signals.
        .target(name: "IntentWorker", dependencies: ["IntentKit", "IntentAMQP", "IntentStore"]),
        // What a client does: submit, read, wait, answer, cancel, delete, watch.
        .target(name: "IntentClient", dependencies: ["IntentKit", "IntentAMQP", "IntentStore"]),
        // The tools' command line: arguments, terminal output, exit codes, the shared main.
        .target(name: "IntentCLI", dependencies: ["IntentKit", "IntentAMQP", "IntentStore", "IntentClient"]),
        // What a worker's author imports, with `Worker.serve`.
        .target(name: "IntentQueue", dependencies: ["IntentKit", "IntentAMQP", "IntentStore", "IntentWorker", "IntentCLI"]),
        // The worker on an in-memory transport, for handler tests.
        .target(name: "IntentTesting", dependencies: ["IntentQueue"]),

        // HTTP: the only importer of CMicroHTTPD; the API and dashboard over the client's pieces.
        .target(name: "IntentGateway", dependencies: ["CMicroHTTPD", "IntentKit", "IntentAMQP", "IntentStore", "IntentClient", "IntentWorker"]),

        // The example app, served by intent-worker.
        .target(name: "Hairdressers", dependencies: ["IntentKit", "IntentStore"]),
        .executableTarget(name: "intent-worker", dependencies: ["IntentQueue", "IntentCLI", "Hairdressers"]),
        .executableTarget(name: "intent-submit", dependencies: ["IntentClient", "IntentCLI"]),
        .executableTarget(name: "intent-status", dependencies: ["IntentClient", "IntentCLI"]),
        .executableTarget(name: "intent-gateway", dependencies: ["IntentGateway", "IntentCLI"]),
        .executableTarget(name: "intent-bench", dependencies: ["IntentQueue", "IntentCLI", "Hairdressers"]),

        .testTarget(name: "IntentKitTests", dependencies: ["IntentKit"]),
        .testTarget(name: "IntentStoreTests", dependencies: ["IntentStore"]),
        .testTarget(name: "IntentAMQPTests", dependencies: ["IntentAMQP"]),
        .testTarget(name: "IntentCLITests", dependencies: ["IntentCLI"]),
        .testTarget(name: "IntentClientTests", dependencies: ["IntentClient", "IntentStore"]),
        .testTarget(name: "IntentWorkerTests", dependencies: ["IntentWorker", "IntentAMQP", "IntentStore", "IntentTesting"]),
        .testTarget(name: "HairdressersTests", dependencies: ["Hairdressers", "IntentStore"]),
        .testTarget(name: "IntegrationTests", dependencies: ["IntentKit", "IntentStore", "IntentAMQP", "IntentClient", "IntentWorker", "IntentGateway"]),
        .testTarget(name: "IntentGatewayTests", dependencies: ["IntentGateway"]),
    ],
    swiftLanguageModes: [.v6]
)
