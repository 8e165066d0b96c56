import type { JsonSchema } from './resource.schemas';
import type { OpenApiDocument } from './openapi.document';

/**
 * GET /docs: the OpenAPI document rendered on the server into one self-contained HTML page (no
 * scripts, no fonts, nothing fetched), so it reads on a machine without internet.
 */
type Node = Record<string, any>;

const METHODS = ['get', 'post', 'patch', 'put', 'delete'];

const escape = (value: unknown): string =>
  String(value).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const inline = (text: string): string =>
  escape(text)
    .replace(/`([^`]+)`/g, '<code>$1</code>')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>');

/** The little Markdown the document's descriptions use: paragraphs, `- ` lists, tables, code, bold. */
export function markdown(text: string | undefined): string {
  if (!text) return '';
  return text
    .split(/\n{2,}/)
    .map((block) => {
      const lines = block.split('\n');
      if (lines.every((l) => l.startsWith('|'))) {
        const cells = (line: string) => line.replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
        const [head, , ...rows] = lines;
        return `<table><thead><tr>${cells(head).map((c) => `<th>${inline(c)}</th>`).join('')}</tr></thead><tbody>${rows
          .map((row) => `<tr>${cells(row).map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`)
          .join('')}</tbody></table>`;
      }
      if (lines.every((l) => l.startsWith('- '))) return `<ul>${lines.map((l) => `<li>${inline(l.slice(2))}</li>`).join('')}</ul>`;
      return `<p>${inline(block)}</p>`;
    })
    .join('\n');
}

const refName = (ref: string) => ref.split('/').pop()!;
const schemaLink = (ref: string) => `<a href="#schema-${escape(refName(ref))}">${escape(refName(ref))}</a>`;

/** Pretty JSON whose `$ref`s link to the schemas they name. */
const prettyJson = (value: unknown): string =>
  `<pre>${escape(JSON.stringify(value, null, 2)).replace(/&quot;#\/components\/schemas\/([A-Za-z0-9._-]+)&quot;/g, '<a href="#schema-$1">&quot;#/components/schemas/$1&quot;</a>')}</pre>`;

/** One line for a parameter's schema: its type and constraints. */
function schemaSummary(schema: JsonSchema | undefined): string {
  if (!schema) return '';
  if (typeof schema.$ref === 'string') return schemaLink(schema.$ref);
  const parts = [escape(schema.type ?? (schema.const !== undefined ? 'const' : 'any'))];
  if (schema.const !== undefined) parts.push(`= <code>${escape(schema.const)}</code>`);
  if (Array.isArray(schema.enum)) parts.push(`one of ${schema.enum.map((v) => `<code>${escape(v)}</code>`).join(', ')}`);
  if (schema.format) parts.push(`(${escape(schema.format)})`);
  if (schema.pattern) parts.push(`matching <code>${escape(schema.pattern)}</code>`);
  if (schema.minimum !== undefined || schema.maximum !== undefined) parts.push(`${escape(schema.minimum ?? '')}..${escape(schema.maximum ?? '')}`);
  if (schema.default !== undefined) parts.push(`default <code>${escape(schema.default)}</code>`);
  return parts.join(' ');
}

function resolve(doc: OpenApiDocument, node: Node): Node {
  if (typeof node.$ref !== 'string') return node;
  const [, , kind, name] = node.$ref.split('/');
  return (doc.components as Node)[kind][name];
}

function parametersTable(doc: OpenApiDocument, parameters: Node[] | undefined): string {
  if (!parameters?.length) return '';
  const rows = parameters
    .map((p) => resolve(doc, p))
    .map((p) => `<tr><td><code>${escape(p.name)}</code></td><td>${escape(p.in)}</td><td>${p.required ? 'yes' : 'no'}</td><td>${schemaSummary(p.schema)}</td><td>${inline(p.description ?? '')}</td></tr>`)
    .join('');
  return `<h4>Parameters</h4><table><thead><tr><th>name</th><th>in</th><th>required</th><th>schema</th><th>description</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function bodySection(doc: OpenApiDocument, requestBody: Node | undefined): string {
  if (!requestBody) return '';
  return Object.entries(requestBody.content as Node)
    .map(([type, media]) => {
      const schema = media.schema as Node;
      const shown = typeof schema.$ref === 'string' ? resolve(doc, schema) : schema;
      const name = typeof schema.$ref === 'string' ? ` ${schemaLink(schema.$ref)}` : '';
      return `<h4>Request body${name} <small>${escape(type)}${requestBody.required ? ', required' : ', optional'}</small></h4>${prettyJson(shown)}`;
    })
    .join('');
}

function responsesTable(responses: Node): string {
  const rows = Object.entries(responses)
    .map(([status, response]) => {
      const content = Object.entries((response.content ?? {}) as Node)
        .map(([type, media]) => `${escape(type)}${media.schema ? ': ' + schemaSummary(media.schema) : ''}`)
        .join('<br>');
      const headers = Object.keys(response.headers ?? {})
        .map((h) => `<code>${escape(h)}</code>`)
        .join(' ');
      return `<tr><td class="status s${escape(status[0])}">${escape(status)}</td><td>${inline(response.description ?? '')}</td><td>${content}</td><td>${headers}</td></tr>`;
    })
    .join('');
  return `<h4>Responses</h4><table><thead><tr><th>status</th><th>description</th><th>body</th><th>headers</th></tr></thead><tbody>${rows}</tbody></table>`;
}

function securityLine(operation: Node): string {
  const schemes = (operation.security as Node[] | undefined)?.flatMap((s) => Object.keys(s)) ?? [];
  return `<p class="auth">Authentication: ${schemes.length ? schemes.map((s) => `<a href="#security-${escape(s)}">${escape(s)}</a>`).join(', ') : 'none'}</p>`;
}

function operationSection(doc: OpenApiDocument, method: string, path: string, operation: Node): string {
  return `<section class="operation" id="op-${escape(operation.operationId)}">
<h3><span class="method ${escape(method)}">${escape(method.toUpperCase())}</span> <code>${escape(path)}</code></h3>
<p class="summary">${inline(operation.summary ?? '')}</p>
${markdown(operation.description)}
${securityLine(operation)}
${parametersTable(doc, operation.parameters)}
${bodySection(doc, operation.requestBody)}
${responsesTable(operation.responses)}
</section>`;
}

export function renderDocsPage(doc: OpenApiDocument): string {
  const info = doc.info as Node;
  const components = doc.components as Node;
  const operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    METHODS.filter((m) => item[m]).map((method) => ({ path, method, operation: item[method] as Node })),
  );
  const webhooks = Object.entries((doc.webhooks ?? {}) as Node).map(([name, item]) => ({ name, operation: item.post as Node }));
  const tags = (doc.tags as Node[]) ?? [];
  const byTag = (tag: string) => operations.filter((o) => (o.operation.tags as string[])[0] === tag);

  const nav = tags
    .map((tag) => {
      const links =
        tag.name === 'Webhook events'
          ? webhooks.map((w) => `<li><a href="#op-${escape(w.operation.operationId)}">${escape(w.name)}</a></li>`)
          : byTag(tag.name).map(
              (o) => `<li><a href="#op-${escape(o.operation.operationId)}"><span class="method ${escape(o.method)}">${escape(o.method.toUpperCase())}</span> ${escape(o.path)}</a></li>`,
            );
      return `<h2><a href="#tag-${escape(tag.name.replace(/\s+/g, '-'))}">${escape(tag.name)}</a></h2><ul>${links.join('')}</ul>`;
    })
    .join('');

  const tagSections = tags
    .map((tag) => {
      const body =
        tag.name === 'Webhook events'
          ? webhooks
              .map(
                (w) => `<section class="operation" id="op-${escape(w.operation.operationId)}">
<h3><span class="method post">POST</span> <code>${escape(w.name)}</code> <small>to your endpoint</small></h3>
${markdown(w.operation.description)}
${parametersTable(doc, w.operation.parameters)}
${bodySection(doc, w.operation.requestBody)}
${responsesTable(w.operation.responses)}
</section>`,
              )
              .join('\n')
          : byTag(tag.name)
              .map((o) => operationSection(doc, o.method, o.path, o.operation))
              .join('\n');
      return `<section id="tag-${escape(tag.name.replace(/\s+/g, '-'))}"><h2>${escape(tag.name)}</h2>${markdown(tag.description)}${body}</section>`;
    })
    .join('\n');

  const security = Object.entries((components.securitySchemes ?? {}) as Node)
    .map(([name, scheme]) => `<tr id="security-${escape(name)}"><td><code>${escape(name)}</code></td><td>${escape(scheme.type)} ${escape(scheme.scheme ?? '')}</td><td>${inline(scheme.description ?? '')}</td></tr>`)
    .join('');
  const headers = Object.entries((components.headers ?? {}) as Node)
    .map(([name, header]) => `<tr><td><code>${escape(name)}</code></td><td>${schemaSummary(header.schema)}</td><td>${inline(header.description ?? '')}</td></tr>`)
    .join('');
  const schemas = Object.entries((components.schemas ?? {}) as Node)
    .map(([name, schema]) => `<section class="schema" id="schema-${escape(name)}"><h3>${escape(name)}</h3>${markdown(schema.description)}${prettyJson(schema)}</section>`)
    .join('\n');

  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(info.title)} ${escape(info.version)}</title>
<style>${STYLE}</style>
</head>
<body>
<nav>
<p class="brand">${escape(info.title)}<br><small>version ${escape(info.version)} · <a href="/openapi.json">openapi.json</a></small></p>
${nav}
<h2><a href="#authentication">Authentication</a></h2>
<h2><a href="#schemas">Schemas</a></h2>
</nav>
<main>
<header><h1>${escape(info.title)} <small>${escape(info.version)}</small></h1>${markdown(info.description)}
<p>Machine-readable: <a href="/openapi.json"><code>GET /openapi.json</code></a> (OpenAPI ${escape(doc.openapi)}).</p></header>
<section id="authentication"><h2>Authentication</h2>
<table><thead><tr><th>scheme</th><th>kind</th><th>description</th></tr></thead><tbody>${security}</tbody></table>
<h3>Headers</h3>
<table><thead><tr><th>header</th><th>schema</th><th>description</th></tr></thead><tbody>${headers}</tbody></table>
</section>
${tagSections}
<section id="schemas"><h2>Schemas</h2>${schemas}</section>
</main>
</body>
</html>
`;
}

const STYLE = `
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1f2328;display:flex}
nav{position:sticky;top:0;height:100vh;overflow:auto;width:300px;flex:none;padding:16px;background:#f6f8fa;border-right:1px solid #d0d7de;font-size:13px}
nav h2{font-size:14px;margin:16px 0 4px}
nav ul{list-style:none;margin:0;padding:0}
nav li{margin:2px 0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
nav a{color:#1f2328;text-decoration:none}
nav a:hover{text-decoration:underline}
.brand{font-weight:600;font-size:16px;margin:0}
main{flex:1;min-width:0;padding:24px 40px;max-width:1200px}
h1 small,h3 small,h4 small{color:#656d76;font-weight:400}
section.operation,section.schema{border-top:1px solid #d0d7de;padding:8px 0 16px}
h2{border-bottom:2px solid #d0d7de;padding-bottom:4px;margin-top:40px}
h4{margin:16px 0 6px}
.summary{font-weight:600}
.auth{color:#656d76}
.method{display:inline-block;min-width:58px;text-align:center;border-radius:4px;padding:1px 6px;font:600 12px ui-monospace,monospace;color:#fff;background:#6e7781}
.method.get{background:#0969da}.method.post{background:#1a7f37}.method.patch{background:#9a6700}.method.delete{background:#cf222e}.method.put{background:#8250df}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:13px}
code{background:#f6f8fa;padding:1px 4px;border-radius:4px}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:12px;overflow:auto;max-height:480px}
table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{border:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}
td.status{font-weight:600;font-family:ui-monospace,monospace}
td.s2{color:#1a7f37}td.s4{color:#9a6700}td.s5{color:#cf222e}
`;
