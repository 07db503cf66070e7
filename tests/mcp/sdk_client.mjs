// rankscope-analyze mcp driven by the official MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk, pinned in package-lock.json), over stdio as an MCP host runs it:
// initialize, list the tools, call every tool on a recording with a straggler, one with a hang
// and one node's bundle, validate every structuredContent against its outputSchema (the SDK's
// own validation, counted, and an explicit JSON Schema 2020-12 validation with ajv), compare the
// findings with `rankscope-analyze report --format json`, and check the errors.
//   node sdk_client.mjs ANALYZE DIR
// DIR holds cpu.rsdb, hang.rsdb, hang/node1.rsb, their reports (*.report.json) and traces/.
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020 from 'ajv/dist/2020.js';

const [analyze, dir] = process.argv.slice(2);
let passed = 0;
function ok(what) {
  passed += 1;
  console.log(`ok ${passed} - ${what}`);
}

// The SDK validates structuredContent with the validator it is given: this one counts.
class CountingValidator {
  constructor() {
    this.inner = new AjvJsonSchemaValidator();
    this.validations = 0;
  }
  getValidator(schema) {
    const validate = this.inner.getValidator(schema);
    return (input) => {
      this.validations += 1;
      return validate(input);
    };
  }
}

// Strict JSON Schema 2020-12 (MCP's default dialect): a schema ajv finds fault with fails.
const ajv = new Ajv2020({ strict: true, allowUnionTypes: true, allErrors: true });
const compiled = new Map();
function validateExplicitly(tool, structured) {
  const validate = compiled.get(tool);
  assert.ok(validate, `no outputSchema compiled for ${tool}`);
  assert.ok(validate(structured), `${tool}: ${ajv.errorsText(validate.errors)}`);
}

async function connect(file) {
  const transport = new StdioClientTransport({
    command: analyze,
    args: ['mcp', file, '--trace-dir', `${dir}/traces`],
    stderr: 'pipe',
  });
  let negotiated = null;
  transport.setProtocolVersion = (v) => { negotiated = v; };
  const validator = new CountingValidator();
  const client = new Client({ name: 'rankscope-test', version: '1' },
                            { jsonSchemaValidator: validator });
  await client.connect(transport);
  return { client, transport, validator, negotiated: () => negotiated };
}

async function call(session, name, args) {
  const result = await session.client.callTool({ name, arguments: args });
  assert.equal(result.isError, false, `${name}: ${JSON.stringify(result.content)}`);
  assert.ok(result.structuredContent, `${name}: no structuredContent`);
  assert.equal(result.content[0].type, 'text');
  assert.ok(result.content[0].text.length > 0 && result.content[0].text.length <= 4000);
  validateExplicitly(name, result.structuredContent);
  return result.structuredContent;
}

async function toolError(session, name, args) {
  const result = await session.client.callTool({ name, arguments: args });
  assert.equal(result.isError, true, `${name} ${JSON.stringify(args)} was no error`);
  return result.content[0].text;
}

async function check(file, report, expect) {
  const s = await connect(file);
  assert.equal(s.negotiated(), LATEST_PROTOCOL_VERSION);
  assert.equal(s.client.getServerVersion().name, 'rankscope-analyze');
  assert.ok(s.client.getServerCapabilities().tools);
  ok(`${file}: initialized, protocol ${s.negotiated()}`);

  const { tools } = await s.client.listTools();
  const names = tools.map((t) => t.name);
  assert.deepEqual(names, ['summary', 'find_stragglers', 'hang_report', 'explain_collective',
                           'slowest_collectives', 'node_timeline', 'query', 'export_trace']);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, 'object');
    assert.ok(t.outputSchema, `${t.name} has no outputSchema`);
    ajv.compile(t.inputSchema);
    if (!compiled.has(t.name)) compiled.set(t.name, ajv.compile(t.outputSchema));
  }
  ok(`${file}: ${tools.length} tools listed, every input and output schema compiles (2020-12)`);

  let calls = 0;
  const summary = await call(s, 'summary', {}); calls++;
  assert.equal(summary.node_count, expect.nodes);
  assert.equal(summary.start_ns, report.start_ns);
  assert.equal(summary.verdict, report.verdict);

  const found = await call(s, 'find_stragglers', {}); calls++;
  assert.equal(found.verdict, report.verdict);
  // The report's findings less the collectives they arrived last in (those are for the trace:
  // rankscope-export --report; find_stragglers keeps their count).
  const strip = (list) => list.map(({ late_arrivals, ...rest }) => rest);  // eslint-disable-line no-unused-vars
  assert.deepEqual(found.stragglers, strip(report.stragglers));
  assert.deepEqual(found.observations, strip(report.observations));
  assert.equal(found.truncated, false);
  if (expect.straggler) {
    assert.equal(found.stragglers[0].node, expect.straggler.node);
    assert.equal(found.stragglers[0].cause, expect.straggler.cause);
  }
  ok(`${file}: find_stragglers gives the verdict of report --format json: ${found.verdict}`);

  const hang = await call(s, 'hang_report', {}); calls++;
  assert.equal(hang.detected, report.hang.detected);
  assert.deepEqual(hang.hang, report.hang);
  if (expect.hang) assert.deepEqual(hang.hang.culprit_nodes, expect.hang);
  ok(`${file}: hang_report agrees with the report (detected: ${hang.detected})`);

  const comm = hang.communicators[0];
  const seq = expect.hang ? hang.hang.seq : comm.first_seq + 5;
  const explained = await call(s, 'explain_collective', { comm: comm.comm_id_hex, seq }); calls++;
  assert.equal(explained.comm_id_hex, comm.comm_id_hex);
  assert.equal(explained.seq, seq);
  assert.ok(explained.ranks.length > 0);
  ok(`${file}: explain_collective ${comm.comm_id_hex} seq ${seq}: ${explained.ranks.length} ranks`);

  const node = summary.nodes[0].node;
  const timeline = await call(s, 'node_timeline', { node, from: '+0', to: '+2s', limit: 50 }); calls++;
  assert.ok(timeline.events.length > 0 && timeline.events.length <= 50);
  for (const e of timeline.events) assert.equal(typeof e.timestamp_ns, 'number');

  const rows = await call(s, 'query',
                          { sql: 'SELECT node, COUNT(*) AS calls FROM nccl_events GROUP BY node' });
  calls++;
  assert.deepEqual(rows.columns, ['node', 'calls']);
  assert.equal(rows.row_count, expect.nodes);

  const trace = await call(s, 'export_trace', { from: '+0', to: '+1s' }); calls++;
  assert.ok(trace.path.startsWith(`${dir}/traces/`));
  assert.equal(fs.statSync(trace.path).size, trace.bytes);
  ok(`${file}: node_timeline, query and export_trace (${trace.path})`);

  assert.equal(s.validator.validations, calls);
  ok(`${file}: the SDK validated all ${calls} structuredContent against their outputSchema`);

  const { resources } = await s.client.listResources();
  assert.deepEqual(resources.map((r) => r.uri), ['rankscope://schema', 'rankscope://report']);
  const schema = await s.client.readResource({ uri: 'rankscope://schema' });
  assert.match(schema.contents[0].text, /nccl_events_v/);
  const text = await s.client.readResource({ uri: 'rankscope://report' });
  assert.ok(text.contents[0].text.startsWith(report.verdict));
  ok(`${file}: resources schema and report`);

  // Errors the assistant can act on, and protocol errors; the server goes on.
  assert.match(await toolError(s, 'node_timeline', { node: 'nope' }),
               new RegExp(`no node 'nope' in this recording; its nodes are ${node}`));
  assert.match(await toolError(s, 'query', { sql: 'DROP TABLE nccl_events' }),
               /DROP TABLE is not allowed/);
  assert.match(await toolError(s, 'query', { sql: "INSERT INTO metadata VALUES ('a', 'b')" }),
               /INSERT is not allowed/);
  assert.match(await toolError(s, 'query', { sql: "ATTACH DATABASE 'x.db' AS x" }),
               /ATTACH is not allowed/);
  assert.match(await toolError(s, 'explain_collective', { comm: comm.comm_id_hex, seq: 'ten' }),
               /argument 'seq' must be an integer/);
  assert.match(await toolError(s, 'explain_collective', { comm: '0x1', seq: 1 }),
               /no communicator 0x0000000000000001/);
  await assert.rejects(s.client.callTool({ name: 'no_such_tool', arguments: {} }),
                       (e) => e.code === -32602 && /unknown tool/.test(e.message));
  const big = await s.client.callTool({ name: 'query', arguments: {
    sql: "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c LIMIT 100000) " +
         "SELECT x, printf('%.900c', 'y') FROM c", limit: 1000 } });
  assert.equal(big.structuredContent.truncated, true);
  assert.ok(big.structuredContent.hint.length > 0);
  assert.ok(JSON.stringify(big.structuredContent).length <= 200000);
  await s.client.ping();
  ok(`${file}: tool errors, an unknown tool, a huge result, then a ping`);
  await s.client.close();
}

const cpu = JSON.parse(fs.readFileSync(`${dir}/cpu.report.json`));
const hang = JSON.parse(fs.readFileSync(`${dir}/hang.report.json`));
const bundle = JSON.parse(fs.readFileSync(`${dir}/node1.report.json`));
await check(`${dir}/cpu.rsdb`, cpu,
            { nodes: 4, straggler: { node: 'node2', cause: 'cpu_contention' } });
await check(`${dir}/hang.rsdb`, hang, { nodes: 4, hang: ['node1'] });
await check(`${dir}/hang/node1.rsb`, bundle, { nodes: 1 });
console.log(`${passed} passed, 0 failed`);
