import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { invalidArgument, notFound, type Violation } from "@loom/contracts/errors";
import { isUuid } from "@loom/contracts/ids";
import { pageInfo, pageWindow } from "@loom/contracts/paging";
import { spanBounds } from "@loom/contracts/spans";
import { lengthProblem, nameProblem } from "@loom/contracts/text";
import { type EventsService, type Span, SpanSchema } from "@loom/proto/events/v1/events_pb";
import { requirePrincipal } from "@loom/server/principal";
import { z } from "zod";
import type { EventsStore, SpanRecord } from "./store/port.ts";

export const spanStatuses = ["OK", "ERROR", "UNSET"] as const;

/** RFC 3339 with an offset and any fraction of a second, as OpenTelemetry's exporters write it. */
const dateTime = z.iso.datetime({ offset: true });

function checkText(violations: Violation[], path: string, value: string, problem: string | undefined): string {
  if (problem) violations.push({ path, message: problem });
  return value;
}

const checkTime = (violations: Violation[], path: string, value: string) =>
  checkText(violations, path, value, dateTime.safeParse(value).success ? undefined : "must be an RFC 3339 date-time");

/** One span checked, with public paths (`body[3].events[0].name`); its record when it passes. */
function checkSpan(violations: Violation[], path: string, span: Span): SpanRecord | undefined {
  const before = violations.length;
  const id = (field: string, value: string) =>
    checkText(violations, `${path}.${field}`, value, lengthProblem(value, 1, spanBounds.maxIdLength));
  const name = (at: string, value: string) =>
    checkText(violations, at, value, nameProblem(value, 1, spanBounds.maxNameLength));
  if (!(spanStatuses as readonly string[]).includes(span.status))
    violations.push({ path: `${path}.status`, message: `must be one of ${spanStatuses.join(", ")}` });
  if (span.events.length > spanBounds.maxEvents)
    violations.push({ path: `${path}.events`, message: `must hold at most ${spanBounds.maxEvents} events` });
  const record: SpanRecord = {
    spanId: id("span_id", span.spanId),
    traceId: id("trace_id", span.traceId),
    ...(span.parentId !== undefined ? { parentId: id("parent_id", span.parentId) } : {}),
    name: name(`${path}.name`, span.name),
    startTime: checkTime(violations, `${path}.start_time`, span.startTime),
    endTime: checkTime(violations, `${path}.end_time`, span.endTime),
    status: span.status as SpanRecord["status"],
    attributes: span.attributes ?? {},
    events: span.events.map((e, i) => ({
      name: name(`${path}.events[${i}].name`, e.name),
      timestamp: checkTime(violations, `${path}.events[${i}].timestamp`, e.timestamp),
      attributes: e.attributes ?? {},
    })),
  };
  return violations.length > before ? undefined : record;
}

function spanMessage(record: SpanRecord): Span {
  return create(SpanSchema, record);
}

function checkRunId(violations: Violation[], runId: string): string {
  if (!isUuid(runId)) violations.push({ path: "path.structure_run_id", message: "must be a uuid" });
  return runId.toLowerCase();
}

/** AppendSpans and ListSpans of the events service (docs/behaviour.md §6). */
export function spanHandlers(store: EventsStore): Pick<ServiceImpl<typeof EventsService>, "appendSpans" | "listSpans"> {
  return {
    async appendSpans(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      const runId = checkRunId(violations, req.structureRunId);
      const batch: SpanRecord[] = [];
      if (req.spans.length < 1 || req.spans.length > spanBounds.maxBatch) {
        violations.push({ path: "body", message: `must hold 1 to ${spanBounds.maxBatch} spans` });
      } else {
        req.spans.forEach((span, i) => {
          const record = checkSpan(violations, `body[${i}]`, span);
          if (record) batch.push(record);
        });
      }
      if (violations.length > 0) throw invalidArgument(violations);
      const stored = await store.appendSpans(runId, organizationId, batch);
      await store.durable();
      if (!stored) throw notFound("structure run");
      return { spanIds: batch.map((s) => s.spanId) };
    },

    async listSpans(req, ctx) {
      const { organizationId } = requirePrincipal(ctx);
      const violations: Violation[] = [];
      const runId = checkRunId(violations, req.structureRunId);
      if (violations.length > 0) throw invalidArgument(violations);
      const window = pageWindow(req.page);
      const page = await store.listSpans(runId, organizationId, window.skip, window.pageSize);
      if (!page) throw notFound("structure run");
      return { spans: page.items.map(spanMessage), page: pageInfo(window, page.totalCount) };
    },
  };
}
