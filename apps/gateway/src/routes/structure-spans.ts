import { spanBounds } from "@loom/contracts/spans";
import type { Span } from "@loom/proto/events/v1/events_pb";
import { z } from "zod";
import { bodyLimits } from "../body.ts";
import type { ServiceClients } from "../clients.ts";
import { pagination } from "../json.ts";
import { defineOperation } from "../operation.ts";
import { spanFields, spanListSchema } from "../schemas.ts";
import { boundedName, boundedText, jsonObject, pageQuery, uuid } from "../validation.ts";

/** RFC 3339 with an offset and any fraction of a second, as OpenTelemetry's exporters write it. */
const dateTime = z.iso.datetime({ offset: true, error: "must be an RFC 3339 date-time" });
const spanText = boundedText(spanBounds.maxIdLength);
const attributes = jsonObject.default({});

/** One span as griptape's GriptapeCloudObservabilityDriver sends it; other keys are ignored. */
const newSpan = z.object({
  span_id: spanText.meta(spanFields.span_id),
  trace_id: spanText.meta(spanFields.trace_id),
  parent_id: spanText.nullable().optional().meta(spanFields.parent_id),
  name: boundedName(spanBounds.maxNameLength).meta(spanFields.name),
  start_time: dateTime.meta(spanFields.start_time),
  end_time: dateTime.meta(spanFields.end_time),
  status: z.enum(["OK", "ERROR", "UNSET"], { error: "must be one of OK, ERROR, UNSET" }).meta(spanFields.status),
  attributes: attributes.meta(spanFields.attributes),
  events: z
    .array(
      z.object({
        name: boundedName(spanBounds.maxNameLength).meta(spanFields.event_name),
        timestamp: dateTime.meta(spanFields.event_timestamp),
        attributes: attributes.meta(spanFields.attributes),
      }),
    )
    .max(spanBounds.maxEvents, `must hold at most ${spanBounds.maxEvents} events`)
    .default([])
    .meta(spanFields.events),
});
const spanArray = z
  .array(newSpan)
  .min(1, "must hold at least one span")
  .max(spanBounds.maxBatch, `must hold at most ${spanBounds.maxBatch} spans`);

function spanJson(span: Span) {
  return {
    span_id: span.spanId,
    trace_id: span.traceId,
    parent_id: span.parentId ?? null,
    name: span.name,
    start_time: span.startTime,
    end_time: span.endTime,
    status: span.status,
    attributes: span.attributes ?? {},
    events: span.events.map((e) => ({ name: e.name, timestamp: e.timestamp, attributes: e.attributes ?? {} })),
  };
}

export function structureSpanOperations({ events }: ServiceClients) {
  const runPath = z.object({ structure_run_id: uuid });
  return [
    defineOperation({
      id: "CreateSpans",
      method: "POST",
      path: "/structure-runs/{structure_run_id}/spans",
      summary:
        "Stores a structure run's trace spans, a bare array as griptape's observability driver sends it; all or nothing",
      params: runPath,
      body: { schema: spanArray, required: true, limit: bodyLimits.events },
      // Exactly 200: griptape's exporter counts any other status as a failed export.
      response: {
        status: 200,
        description: "Stored: the spans' ids in the order sent",
        schema: z.strictObject({
          span_ids: z.array(z.string()).meta({ description: "The stored spans' ids, in the order sent" }),
        }),
      },
      async handle({ params, body, call }) {
        const res = await events.appendSpans(
          {
            structureRunId: params.structure_run_id,
            spans: body.map((s) => ({
              spanId: s.span_id,
              traceId: s.trace_id,
              ...(s.parent_id != null ? { parentId: s.parent_id } : {}),
              name: s.name,
              startTime: s.start_time,
              endTime: s.end_time,
              status: s.status,
              attributes: s.attributes,
              events: s.events,
            })),
          },
          call,
        );
        return { span_ids: res.spanIds };
      },
    }),
    defineOperation({
      id: "ListSpans",
      method: "GET",
      path: "/structure-runs/{structure_run_id}/spans",
      summary: "A structure run's spans in the order they were stored",
      params: runPath,
      query: pageQuery,
      response: { status: 200, description: "A page of the run's spans", schema: spanListSchema },
      async handle({ params, query, call }) {
        const res = await events.listSpans(
          { structureRunId: params.structure_run_id, page: { page: query.page, pageSize: query.page_size } },
          call,
        );
        return { spans: res.spans.map(spanJson), pagination: pagination(res.page) };
      },
    }),
  ];
}
