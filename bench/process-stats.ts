import { readFileSync } from "node:fs";

/** A process's resident memory now and its peak so far (VmRSS, VmHWM), in bytes. */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
  return { rss: kib("VmRSS"), hwm: kib("VmHWM") };
}

/** CPU time a process has used so far (user + system), in ms: what a crowd cost the server, whatever else the machine was doing. */
export function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in clock ticks of 1/100 s
}
