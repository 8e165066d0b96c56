/**
 * k8s/observability, checked offline: the Grafana dashboard and the PrometheusRule parse as PromQL
 * (Prometheus' own lezer grammar, strict: a syntax error fails), use only metrics the code exports
 * (found in the source, not listed here) with their real labels, apply rate() and friends to
 * counters only, and have the structure Grafana and the prometheus-operator need.
 *
 * The ServiceMonitor's wiring to the apps' Services and ports is in manifests.spec.ts (it needs the
 * overlays built by kubectl).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { SyntaxNode } from '@lezer/common';
import { parser as promqlParser } from '@prometheus-io/lezer-promql';
import { collectDefaultMetrics, Registry } from 'prom-client';
import ts from 'typescript';
import { parseAllDocuments } from 'yaml';
import { registry as runtimeRegistry } from '@campaign-ops/service-runtime';
import { schemaErrors } from './schemas';

const root = join(__dirname, '..', '..');
const observability = join(root, 'k8s', 'observability');

// Parsed JSON and YAML: the checks below are what types them.
type Json = any;

// ---------------------------------------------------------------------------------------------
// What the apps export, read from the code

type MetricType = 'counter' | 'gauge' | 'histogram' | 'summary';
interface ExportedMetric {
  type: MetricType;
  labels: string[];
  /** Where it is defined: a source file, prom-client's default metrics, or another exporter. */
  source: string;
  definedBy: 'constructor' | 'scrapeGauge' | 'defaults' | 'external';
}

const METRIC_CLASSES: Record<string, MetricType> = { Counter: 'counter', Gauge: 'gauge', Histogram: 'histogram', Summary: 'summary' };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'node_modules' ? [] : sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.spec.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

const stringsOf = (node: ts.Expression | undefined): string[] | null => {
  while (node && (ts.isAsExpression(node) || ts.isParenthesizedExpression(node) || ts.isSatisfiesExpression(node))) node = node.expression;
  if (!node || !ts.isArrayLiteralExpression(node)) return null;
  const values = node.elements.map((element) => (ts.isStringLiteralLike(element) ? element.text : null));
  return values.every((value) => value !== null) ? (values as string[]) : null;
};

/**
 * Every metric the apps' code defines: `new Counter|Gauge|Histogram|Summary({ name: '…', labelNames: […] })`
 * and `scrapeGauge('…', help, […], read)` with literal names, in libs/ and apps/ (specs left out),
 * plus prom-client's default metrics where the code collects them.
 */
function exportedMetrics(): Map<string, ExportedMetric> {
  const metrics = new Map<string, ExportedMetric>();
  let collectsDefaults = false;
  const files = [...sourceFiles(join(root, 'libs')), ...sourceFiles(join(root, 'apps'))];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (!/\b(Counter|Gauge|Histogram|Summary|scrapeGauge|collectDefaultMetrics)\b/.test(text)) continue;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
    const where = relative(root, file);
    const visit = (node: ts.Node): void => {
      if (ts.isNewExpression(node) && ts.isIdentifier(node.expression) && METRIC_CLASSES[node.expression.text]) {
        const options = node.arguments?.[0];
        if (options && ts.isObjectLiteralExpression(options)) {
          const property = (key: string) =>
            options.properties.find((p): p is ts.PropertyAssignment => ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && p.name.text === key)
              ?.initializer;
          const name = property('name');
          if (name && ts.isStringLiteralLike(name)) {
            metrics.set(name.text, {
              type: METRIC_CLASSES[node.expression.text],
              labels: stringsOf(property('labelNames')) ?? [],
              source: where,
              definedBy: 'constructor',
            });
          }
        }
      }
      if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
        const [name, , labelNames] = node.arguments;
        if (node.expression.text === 'scrapeGauge' && name && ts.isStringLiteralLike(name))
          metrics.set(name.text, { type: 'gauge', labels: stringsOf(labelNames) ?? [], source: where, definedBy: 'scrapeGauge' });
        if (node.expression.text === 'collectDefaultMetrics') collectsDefaults = true;
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  if (collectsDefaults) {
    const defaults = new Registry();
    collectDefaultMetrics({ register: defaults });
    for (const metric of defaults.getMetricsAsArray() as unknown as Array<{ name: string; type: MetricType; labelNames: string[] }>) {
      metrics.set(metric.name, { type: metric.type, labels: [...metric.labelNames], source: "prom-client's default metrics", definedBy: 'defaults' });
    }
  }
  return metrics;
}

const EXPORTED = exportedMetrics();

/**
 * Metrics of other exporters the rules and panels may use, with their labels: kube-state-metrics'
 * pod readiness, and Prometheus' own `up` per scrape target.
 */
const EXTERNAL: Record<string, ExportedMetric> = {
  kube_pod_status_ready: { type: 'gauge', labels: ['namespace', 'pod', 'uid', 'condition'], source: 'kube-state-metrics', definedBy: 'external' },
  kube_pod_container_status_ready: { type: 'gauge', labels: ['namespace', 'pod', 'uid', 'container'], source: 'kube-state-metrics', definedBy: 'external' },
  up: { type: 'gauge', labels: [], source: 'Prometheus', definedBy: 'external' },
};

/** Labels Prometheus adds to every series it scrapes through the ServiceMonitor. */
const TARGET_LABELS = ['job', 'instance', 'namespace', 'pod', 'service', 'endpoint', 'container'];

/**
 * Labels whose values the apps write from a fixed set of literals in their code: a value a query
 * matches on must be one of them (HTTP statuses, numbers computed per answer, are not checked).
 */
const LITERAL_LABELS = ['processor', 'durable', 'outcome', 'status'];
const SOURCE_TEXT = [...sourceFiles(join(root, 'libs')), ...sourceFiles(join(root, 'apps'))].map((file) => readFileSync(file, 'utf8')).join('\n');
const APP_JOBS = ['api-gateway', 'dispatch-service', 'connection-service', 'webhook-delivery-service'];

/** The series names a metric exposes, each with its own type and labels (histograms: _bucket with `le`, _sum, _count). */
function seriesOf(metrics: Map<string, ExportedMetric>): Map<string, ExportedMetric & { metric: string }> {
  const series = new Map<string, ExportedMetric & { metric: string }>();
  for (const [name, metric] of metrics) {
    if (metric.type === 'histogram') {
      series.set(`${name}_bucket`, { ...metric, type: 'counter', labels: [...metric.labels, 'le'], metric: name });
      series.set(`${name}_sum`, { ...metric, type: 'counter', metric: name });
      series.set(`${name}_count`, { ...metric, type: 'counter', metric: name });
    } else if (metric.type === 'summary') {
      series.set(name, { ...metric, type: 'gauge', labels: [...metric.labels, 'quantile'], metric: name });
      series.set(`${name}_sum`, { ...metric, type: 'counter', metric: name });
      series.set(`${name}_count`, { ...metric, type: 'counter', metric: name });
    } else {
      series.set(name, { ...metric, metric: name });
    }
  }
  return series;
}

const SERIES = seriesOf(new Map([...EXPORTED, ...Object.entries(EXTERNAL)]));

// ---------------------------------------------------------------------------------------------
// PromQL

const strictParser = promqlParser.configure({ strict: true });

/** Functions that take a range vector (a matrix selector or a subquery). */
const RANGE_FUNCTIONS = new Set([
  'rate',
  'irate',
  'increase',
  'delta',
  'idelta',
  'deriv',
  'predict_linear',
  'changes',
  'resets',
  'holt_winters',
  'double_exponential_smoothing',
  'avg_over_time',
  'min_over_time',
  'max_over_time',
  'sum_over_time',
  'count_over_time',
  'quantile_over_time',
  'stddev_over_time',
  'stdvar_over_time',
  'last_over_time',
  'present_over_time',
  'absent_over_time',
  'mad_over_time',
]);
/** Of those, the ones only meaningful on counters (they assume resets, not ups and downs). */
const COUNTER_FUNCTIONS = new Set(['rate', 'irate', 'increase', 'resets']);

const children = (node: SyntaxNode): SyntaxNode[] => {
  const list: SyntaxNode[] = [];
  for (let child = node.firstChild; child; child = child.nextSibling) list.push(child);
  return list;
};
const descendants = (node: SyntaxNode, name: string): SyntaxNode[] =>
  children(node).flatMap((child) => [...(child.name === name ? [child] : []), ...descendants(child, name)]);
const unquote = (literal: string): string =>
  literal.startsWith('`') ? literal.slice(1, -1) : (JSON.parse(literal.startsWith("'") ? `"${literal.slice(1, -1).replace(/"/g, '\\"')}"` : literal) as string);

interface Selector {
  metric: string | null;
  matchers: Array<{ label: string; op: string; value: string }>;
}

/** A vector selector's metric name (from its identifier or `__name__`) and matchers. */
function selectorOf(node: SyntaxNode, text: string): Selector {
  const identifier = node.getChild('Identifier');
  const matchers = [...descendants(node, 'UnquotedLabelMatcher'), ...descendants(node, 'QuotedLabelMatcher')].map((matcher) => ({
    label: text.slice(matcher.getChild('LabelName')!.from, matcher.getChild('LabelName')!.to),
    op: text.slice(matcher.getChild('MatchOp')!.from, matcher.getChild('MatchOp')!.to),
    value: unquote(text.slice(matcher.getChild('StringLiteral')!.from, matcher.getChild('StringLiteral')!.to)),
  }));
  const byName = matchers.find((m) => m.label === '__name__' && m.op === '=');
  return {
    metric: identifier ? text.slice(identifier.from, identifier.to) : (byName?.value ?? null),
    matchers: matchers.filter((m) => m.label !== '__name__'),
  };
}

/**
 * What is wrong with one expression, as readable lines: a syntax error; a metric the apps (or the
 * named exporters) do not export; a label a metric does not have; a label value the code never
 * writes; a counter function on a gauge; a range function without a range.
 */
function promqlProblems(expr: string): string[] {
  let tree;
  try {
    tree = strictParser.parse(expr);
  } catch (error) {
    const at = Number(/at (\d+)/.exec((error as Error).message)?.[1] ?? -1);
    return [
      `syntax error${at >= 0 ? ` at ${at}: …${expr.slice(Math.max(0, at - 20), at)}⟨here⟩${expr.slice(at, at + 20)}…` : `: ${(error as Error).message}`}`,
    ];
  }
  const problems: string[] = [];
  const top = tree.topNode;
  const selectors = descendants(top, 'VectorSelector').map((node) => selectorOf(node, expr));
  if (selectors.length === 0) problems.push('uses no metric');
  const known = new Set(TARGET_LABELS);
  for (const { metric, matchers } of selectors) {
    const series = metric === null ? undefined : SERIES.get(metric);
    if (!series) {
      problems.push(`metric ${metric ?? '(no name)'} is not exported by the apps' code`);
      continue;
    }
    for (const label of series.labels) known.add(label);
    for (const { label, op, value } of matchers) {
      if (!series.labels.includes(label) && !TARGET_LABELS.includes(label))
        problems.push(`${metric} has no label ${label} (it has ${[...series.labels, ...TARGET_LABELS].join(', ')})`);
      if (op !== '=' && op !== '=~') continue;
      const values = op === '=~' ? value.replace(/^\(|\)$/g, '').split('|') : [value];
      if (LITERAL_LABELS.includes(label) && series.labels.includes(label)) {
        for (const v of values)
          if (/^[\w-]+$/.test(v) && !/^\d+$/.test(v) && !SOURCE_TEXT.includes(`'${v}'`))
            problems.push(`${metric}{${label}="${v}"}: the code never writes ${label} ${v}`);
      }
      if (label === 'job' && series.source !== 'kube-state-metrics')
        for (const v of values)
          if (!APP_JOBS.includes(v)) problems.push(`${metric}{job="${v}"}: job is the app's name (ServiceMonitor jobLabel), one of ${APP_JOBS.join(', ')}`);
    }
  }
  // Labels a label_replace creates may be grouped on too.
  for (const call of descendants(top, 'FunctionCall')) {
    const name = expr.slice(call.getChild('FunctionIdentifier')!.from, call.getChild('FunctionIdentifier')!.to);
    const args = children(call.getChild('FunctionCallBody')!);
    if (name === 'label_replace' && args[1]?.name === 'StringLiteral') known.add(unquote(expr.slice(args[1].from, args[1].to)));
    if (RANGE_FUNCTIONS.has(name)) {
      const range = args.find((arg) => arg.name === 'MatrixSelector' || arg.name === 'SubqueryExpr');
      if (!range) problems.push(`${name}() needs a range vector ([5m] or a subquery)`);
      else if (COUNTER_FUNCTIONS.has(name) && range.name === 'MatrixSelector') {
        const selector = selectorOf(range.getChild('VectorSelector')!, expr);
        const series = selector.metric ? SERIES.get(selector.metric) : undefined;
        if (series && series.type !== 'counter') problems.push(`${name}(${selector.metric}): ${selector.metric} is a ${series.type}, not a counter`);
      }
    }
  }
  for (const grouping of descendants(top, 'GroupingLabels')) {
    for (const labelNode of descendants(grouping, 'LabelName')) {
      const label = expr.slice(labelNode.from, labelNode.to);
      if (!known.has(label)) problems.push(`groups by ${label}, which none of its metrics has`);
    }
  }
  return problems;
}

/** Grafana's interval macros, as Prometheus would get them after substitution. */
const GRAFANA_MACROS = /\$\{?__(rate_interval|interval|range)\}?/g;

describe('the PromQL checker itself', () => {
  it("finds the metrics of the code: each of service-runtime's registry, the scrape-time gauges and prom-client's defaults", () => {
    const runtime = (runtimeRegistry.getMetricsAsArray() as unknown as Array<{ name: string; labelNames: string[] }>).map((m) => [
      m.name,
      [...m.labelNames].sort(),
    ]);
    expect(
      runtime.filter(
        ([name, labels]) =>
          JSON.stringify(
            EXPORTED.get(name as string)
              ?.labels.slice()
              .sort(),
          ) !== JSON.stringify(labels),
      ),
    ).toEqual([]);
    expect([...EXPORTED.values()].filter((m) => m.definedBy === 'scrapeGauge').length).toBeGreaterThanOrEqual(3);
    expect([...EXPORTED.values()].filter((m) => m.definedBy === 'defaults').length).toBeGreaterThanOrEqual(10);
  });

  it.each([
    ['sum(rate(http_requests_total[5m])', /^syntax error/],
    ['rat(http_requests_total[5m])', /^syntax error/],
    ['sum by (status) (rate(http_request_total[5m]))', /metric http_request_total is not exported/],
    ['max(dispatches{state="completed"})', /dispatches has no label state/],
    ['max(dispatches{status="completd"})', /the code never writes status completd/],
    ['max(event_processor_lag_seconds{processor="dispatch-relays"})', /the code never writes processor dispatch-relays/],
    ['rate(bus_consumer_pending_messages[5m])', /bus_consumer_pending_messages is a gauge, not a counter/],
    ['rate(webhook_delivery_attempts_total)', /rate\(\) needs a range vector/],
    ['sum by (route) (dispatches)', /groups by route/],
    ['up{job="dispatch"}', /job is the app's name/],
  ])('refuses %s', (expr, problem) => {
    expect(promqlProblems(expr)).toEqual(expect.arrayContaining([expect.stringMatching(problem)]));
  });

  it.each([
    'histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{job="api-gateway", route="/v1/campaigns"}[5m])))',
    'max by (durable) (bus_consumer_pending_messages{durable=~"dispatch-executor|webhook-fan-out"})',
    'time() - event_processor_checkpoint_timestamp_seconds{processor="dispatch-relay"}',
    'sum by (app) (label_replace(kube_pod_container_status_ready{container="app"}, "app", "$1", "pod", "(.+)-[a-z0-9]+"))',
  ])('accepts %s', (expr) => {
    expect(promqlProblems(expr)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The Grafana dashboard

describe('the Grafana dashboard (k8s/observability/campaign-ops-dashboard.json)', () => {
  const dashboard: Json = JSON.parse(readFileSync(join(observability, 'campaign-ops-dashboard.json'), 'utf8'));
  /** Every panel, rows' nested ones included. */
  const panels: Json[] = (dashboard.panels ?? []).flatMap((panel: Json) => [panel, ...(panel.panels ?? [])]);
  const queryPanels = panels.filter((panel) => panel.type !== 'row');
  const variables: Json[] = dashboard.templating?.list ?? [];
  const targets = queryPanels.flatMap((panel) => (panel.targets ?? []).map((target: Json) => ({ panel, target })));

  it('is a dashboard Grafana imports: title, uid, a schemaVersion, panels, a Prometheus datasource variable', () => {
    expect(dashboard).toMatchObject({
      title: expect.any(String),
      uid: expect.stringMatching(/^[A-Za-z0-9_-]{1,40}$/),
      schemaVersion: expect.any(Number),
      panels: expect.any(Array),
    });
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    // Provisioned from a ConfigMap, a dashboard cannot ask for its inputs: the datasource is a variable.
    expect(dashboard.__inputs).toBeUndefined();
    expect(variables.find((v) => v.name === 'datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(queryPanels.length).toBeGreaterThanOrEqual(10);
  });

  it('gives every panel a unique id, a title, a type and a place on the 24-column grid, without overlaps', () => {
    const failures: string[] = [];
    const ids = panels.map((panel) => panel.id);
    if (new Set(ids).size !== ids.length || !ids.every((id) => Number.isInteger(id) && id > 0))
      failures.push(`panel ids are not unique positive integers: ${JSON.stringify(ids)}`);
    const cells = new Map<string, string>();
    for (const panel of panels) {
      const where = `panel ${panel.id} "${panel.title}"`;
      if (!panel.title || !panel.type) failures.push(`${where}: no title or type`);
      const { x, y, w, h } = panel.gridPos ?? {};
      if (![x, y, w, h].every(Number.isInteger) || w < 1 || h < 1 || x < 0 || y < 0 || x + w > 24) {
        failures.push(`${where}: gridPos ${JSON.stringify(panel.gridPos)}`);
        continue;
      }
      for (let row = y; row < y + h; row++) {
        for (let column = x; column < x + w; column++) {
          const other = cells.get(`${row},${column}`);
          if (other) failures.push(`${where} overlaps ${other}`);
          cells.set(`${row},${column}`, where);
        }
      }
    }
    expect([...new Set(failures)]).toEqual([]);
  });

  it('queries Prometheus through the datasource variable in every panel and target, each target with a unique refId and an expression', () => {
    const failures: string[] = [];
    const viaVariable = (datasource: Json) => datasource?.type === 'prometheus' && datasource?.uid === '${datasource}';
    for (const panel of queryPanels) {
      const where = `panel ${panel.id} "${panel.title}"`;
      if (!viaVariable(panel.datasource)) failures.push(`${where}: datasource ${JSON.stringify(panel.datasource)}`);
      if (!panel.targets?.length) failures.push(`${where}: no targets`);
      const refIds = (panel.targets ?? []).map((t: Json) => t.refId);
      if (new Set(refIds).size !== refIds.length || refIds.some((id: unknown) => typeof id !== 'string' || !id))
        failures.push(`${where}: refIds ${JSON.stringify(refIds)}`);
      for (const target of panel.targets ?? []) {
        if (typeof target.expr !== 'string' || !target.expr.trim()) failures.push(`${where} ${target.refId}: no expr`);
        if (target.datasource && !viaVariable(target.datasource)) failures.push(`${where} ${target.refId}: datasource ${JSON.stringify(target.datasource)}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('writes every query in valid PromQL on metrics and labels the apps export', () => {
    const failures: string[] = [];
    for (const { panel, target } of targets) {
      for (const problem of promqlProblems(String(target.expr).replace(GRAFANA_MACROS, '5m')))
        failures.push(`panel ${panel.id} "${panel.title}" ${target.refId}: ${problem}`);
    }
    for (const variable of variables.filter((v) => v.type === 'query')) {
      const query = typeof variable.query === 'string' ? variable.query : variable.query?.query;
      const labelValues = /^label_values\((.+),\s*([a-zA-Z_]\w*)\)$/.exec(query ?? '');
      if (!labelValues) {
        failures.push(`variable ${variable.name}: query ${JSON.stringify(query)} is not label_values(selector, label)`);
        continue;
      }
      for (const problem of promqlProblems(`count by (${labelValues[2]}) (${labelValues[1]})`)) failures.push(`variable ${variable.name}: ${problem}`);
    }
    expect(failures).toEqual([]);
  });

  it('uses only the variables it defines', () => {
    const defined = new Set(variables.map((v) => v.name));
    const used = targets.flatMap(({ target }) =>
      [
        ...String(target.expr)
          .replace(GRAFANA_MACROS, '')
          .matchAll(/\$\{?([A-Za-z_]\w*)\}?/g),
      ].map((m) => m[1]),
    );
    expect([...new Set(used)].filter((name) => !defined.has(name))).toEqual([]);
  });

  it.each([
    ['launch rate', /rate\(http_requests_total\{[^}]*route="\/v1\/campaigns"/],
    ['launch latency', /histogram_quantile\(.*http_request_duration_seconds_bucket\{[^}]*route="\/v1\/campaigns"/],
    ['dispatch outcomes', /\bdispatches\{[^}]*status=~"completed\|failed"/],
    ['consumer lag', /\bbus_consumer_pending_messages\b/],
    ['delivery outcomes', /sum by \(outcome\) \(rate\(webhook_delivery_attempts_total\b/],
    ['checkpoint age', /time\(\) - event_processor_checkpoint_timestamp_seconds\b/],
  ])('shows the %s', (_concern, pattern) => {
    expect(targets.map(({ target }) => target.expr).filter((expr: string) => pattern.test(expr)).length).toBeGreaterThan(0);
  });
});

// ---------------------------------------------------------------------------------------------
// The alert rules

function yamlObjects(file: string): Json[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((document) => {
    if (document.errors.length) throw new Error(`${relative(root, file)}: ${document.errors.map((e) => e.message).join('; ')}`);
    return document.toJSON();
  });
}

describe('the alert rules (k8s/observability/prometheus-rules.yaml)', () => {
  const [rule, ...others] = yamlObjects(join(observability, 'prometheus-rules.yaml'));
  const rules: Json[] = (rule?.spec?.groups ?? []).flatMap((group: Json) => (group.rules ?? []).map((r: Json) => ({ ...r, group: group.name })));
  const alerts = rules.filter((r) => r.alert);

  it('is one PrometheusRule of the prometheus-operator (monitoring.coreos.com/v1), valid against its schema', () => {
    expect(others).toEqual([]);
    expect({ apiVersion: rule.apiVersion, kind: rule.kind }).toEqual({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule' });
    expect(schemaErrors(rule)).toBeNull();
    const groups = rule.spec.groups.map((g: Json) => g.name);
    expect(new Set(groups).size).toBe(groups.length);
  });

  it('gives every alert a unique name, a `for`, a severity and a summary, a description and a runbook', () => {
    const failures: string[] = [];
    const names = alerts.map((a) => a.alert);
    if (new Set(names).size !== names.length) failures.push(`alert names repeat: ${names.join(', ')}`);
    for (const alert of alerts) {
      const where = `${alert.group}/${alert.alert}`;
      if (!/^CampaignOps[A-Z]\w+$/.test(alert.alert)) failures.push(`${where}: name is not CampaignOps…`);
      if (typeof alert.for !== 'string' || !/^([1-9]\d*(ms|s|m|h|d|w|y))+$/.test(alert.for))
        failures.push(`${where}: for is ${JSON.stringify(alert.for)}, expected a duration such as 10m`);
      if (!['critical', 'warning', 'info'].includes(alert.labels?.severity)) failures.push(`${where}: severity is ${JSON.stringify(alert.labels?.severity)}`);
      for (const annotation of ['summary', 'description', 'runbook']) {
        if (typeof alert.annotations?.[annotation] !== 'string' || alert.annotations[annotation].trim().length < 10)
          failures.push(`${where}: no ${annotation} annotation`);
      }
      // Alertmanager renders annotations as Go templates: braces must pair.
      for (const [key, value] of Object.entries<string>(alert.annotations ?? {})) {
        if ((value.match(/\{\{/g) ?? []).length !== (value.match(/\}\}/g) ?? []).length) failures.push(`${where}: annotation ${key} has unpaired {{ }}`);
      }
    }
    expect(failures).toEqual([]);
  });

  it('writes every rule in valid PromQL on metrics and labels the apps export (or kube-state-metrics)', () => {
    const failures = rules.flatMap((r) => promqlProblems(String(r.expr)).map((problem) => `${r.group}/${r.alert ?? r.record}: ${problem}`));
    expect(failures).toEqual([]);
  });

  it.each([
    ['consumer lag', ['bus_consumer_pending_messages']],
    ['failing webhook deliveries', ['webhook_delivery_attempts_total']],
    ['stalled checkpoints', ['event_processor_checkpoint_timestamp_seconds']],
    ['not-ready pods', ['kube_pod_status_ready', 'kube_pod_container_status_ready']],
  ])('alerts on %s', (_concern, metrics) => {
    for (const metric of metrics) expect(alerts.filter((a) => new RegExp(`\\b${metric}\\b`).test(a.expr)).map((a) => a.alert)).not.toEqual([]);
  });
});

describe('the ServiceMonitor (k8s/observability/service-monitor.yaml)', () => {
  it("is valid against the prometheus-operator's schema, scrapes /metrics on the port named metrics, and names each job after its app", () => {
    const [monitor, ...others] = yamlObjects(join(observability, 'service-monitor.yaml'));
    expect(others).toEqual([]);
    expect(schemaErrors(monitor)).toBeNull();
    expect(monitor.kind).toBe('ServiceMonitor');
    expect(monitor.spec.jobLabel).toBe('app.kubernetes.io/name');
    expect(monitor.spec.endpoints.map((e: Json) => ({ port: e.port, path: e.path }))).toEqual([{ port: 'metrics', path: '/metrics' }]);
  });
});
