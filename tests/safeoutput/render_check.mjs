// Renders Markdown the way JupyterLab renders a trusted output (math extraction, marked with
// JupyterLab's plugins and its code renderer, math put back) and reports every element or
// attribute in the resulting HTML that could run script or fetch a remote resource.
// stdin: a JSON list of Markdown strings; stdout: a JSON list of findings per string.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const ext = path.resolve(import.meta.dirname, '../../labextension/node_modules');
const require = createRequire(path.join(ext, 'x.js'));
const { Marked, Renderer } = await import(pathToFileURL(require.resolve('marked')).href);
const { gfmHeadingId } = await import(pathToFileURL(require.resolve('marked-gfm-heading-id')).href);
const { mangle } = await import(pathToFileURL(require.resolve('marked-mangle')).href);
const { JSDOM } = require('jsdom');
const latex = await import(
  pathToFileURL(path.join(ext, '@jupyterlab/rendermime/lib/latex.js')).href
);

globalThis.navigator ??= { appName: 'node' }; // latex.js reads it
const marked = new Marked();
marked.use(gfmHeadingId(), mangle());
const renderer = new Renderer();
renderer.code = token =>
  // JupyterLab's highlighter puts the info string into the class unescaped.
  `<pre><code class="language-${token.lang ?? ''}">${token.text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')}</code></pre>`;
marked.use({ renderer });

const TAGS = new Set(
  'p em strong code pre a img ul ol li blockquote h1 h2 h3 h4 h5 h6 hr br del table thead tbody tr th td details summary input span'.split(
    ' '
  )
);
const ATTRS = new Set(['href', 'src', 'alt', 'class', 'align', 'checked', 'disabled', 'type', 'id', 'title', 'start']);

const body = new JSDOM('<body></body>').window.document.body;

function findings(md) {
  let html;
  try {
    const { text, math } = latex.removeMath(md);
    html = latex.replaceMath(marked.parse(text, { gfm: true }), math);
  } catch {
    return []; // JupyterLab fails the render (stray @@N@@ markers): nothing reaches the page
  }
  body.innerHTML = html;
  const out = [];
  for (const el of body.querySelectorAll('*')) {
    const tag = el.tagName.toLowerCase();
    if (!TAGS.has(tag)) out.push(`tag <${tag}>`);
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\s\x00-\x1f]/g, '').toLowerCase();
      if (!ATTRS.has(name)) out.push(`attribute ${name} on <${tag}>`);
      if (name === 'href' && /^[a-z][a-z0-9+.-]*:/.test(value) && !/^(https?|mailto|ftp):/.test(value))
        out.push(`href ${attr.value}`);
      if (name === 'src' && (/^[a-z][a-z0-9+.-]*:/.test(value) || value.startsWith('//')) && !/^data:image\/(png|jpeg|gif);/.test(value))
        out.push(`src ${attr.value}`);
      if (name === 'class' && /[^\w .+#-]/.test(attr.value)) out.push(`class ${attr.value}`);
    }
  }
  return out;
}

let input = '';
for await (const chunk of process.stdin) input += chunk;
process.stdout.write(JSON.stringify(JSON.parse(input).map(findings)));
