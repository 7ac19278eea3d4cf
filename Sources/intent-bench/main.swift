import Foundation
import IntentCLI

Terminal.writeError("intent-bench: not built yet")
exit(ExitCode.software)
