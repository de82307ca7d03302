"""Where a trace-viewer event comes from (TraceEvents.kind): the file, a synthesized threadpool
region, or a TPU derived line. Read by the event build (trace_events), its derived lines
(trace_derived) and the flows (trace_flows), so none of them imports another for it."""
KIND_RAW, KIND_REGION, KIND_DERIVED = 0, 1, 2
