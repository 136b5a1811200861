import "./tracing.ts";
import { runService } from "@loom/server/run-service";
import { serviceProcess } from "./process.ts";

await runService(serviceProcess);
