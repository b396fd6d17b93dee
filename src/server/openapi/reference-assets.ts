/**
 * The reference page's style (inlined in the page, allowed by its hash) and its one script, a
 * filter over the operations. Colours keep a contrast of at least 4.5:1 on their backgrounds.
 * Sections off screen skip layout and paint until scrolled to (content-visibility), so that a
 * phone draws the first screen of a long page at once.
 */
export const REFERENCE_CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1a1a;background:#fff}
a{color:#0b57d0}
code{font:0.9em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;background:#f1f3f5;padding:0 .2em;border-radius:3px;overflow-wrap:anywhere}
header{padding:1rem 1.25rem;border-bottom:1px solid #d0d7de;background:#f6f8fa}
h1{font-size:1.5rem;margin:0 0 .5rem}
.version{font-size:.9rem;font-weight:400;color:#4d5560}
.skip{position:absolute;left:-999px}
.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:2}
#search{margin:.5rem 0 0;display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}
#search.off{visibility:hidden}
#filter{font:inherit;padding:.35rem .5rem;border:1px solid #6e7781;border-radius:4px;min-width:0;flex:1 1 14rem;max-width:28rem}
#matches{color:#4d5560;font-size:.9rem}
.layout{display:grid;grid-template-columns:17rem minmax(0,1fr)}
nav{border-right:1px solid #d0d7de;padding:.75rem 1rem;position:sticky;top:0;align-self:start;max-height:100vh;overflow:auto;font-size:.9rem}
nav ul{list-style:none;margin:0;padding:0}
nav li{margin:.2rem 0}
nav .ops{padding-left:.75rem}
nav .ops a{color:#24292f}
.toc{font-size:1rem;margin:0 0 .5rem}
main{padding:0 1.25rem 3rem;min-width:0}
h2{font-size:1.35rem;margin:2rem 0 .5rem;padding-top:.5rem;border-top:2px solid #d0d7de}
h3{font-size:1.1rem;margin:0 0 .25rem}
h4{font-size:.95rem;margin:1rem 0 .25rem}
.op{border:1px solid #d0d7de;border-radius:6px;padding:.75rem 1rem;margin:1rem 0;content-visibility:auto;contain-intrinsic-size:auto 700px}
.endpoint{margin:.25rem 0}
.path{font-size:1em}
.method{display:inline-block;min-width:3.6em;text-align:center;font:700 .8em ui-monospace,monospace;padding:.1em .3em;border-radius:3px;color:#fff}
.m-get{background:#0b57d0}.m-post{background:#116329}.m-patch{background:#7a4b00}.m-put{background:#7a4b00}.m-delete{background:#b3261e}
.props,.answers{margin:0;padding-left:1.1rem}
.props li,.answers li{margin:.35rem 0}
.props p,.answers p{margin:.1rem 0}
.notes{color:#4d5560;font-size:.9rem}
span.notes{display:block}
@media (max-width:760px){
.layout{display:block}
nav{position:static;max-height:none;border-right:0;border-bottom:1px solid #d0d7de}
nav .ops{display:none}
nav>ul{display:flex;flex-wrap:wrap;gap:.25rem 1rem}
main{padding:0 .75rem 2rem}
header{padding:.75rem}
.op{padding:.5rem .75rem}
.props,.answers{padding-left:.9rem}
}
`;

/**
 * The filter: operations, webhooks and schemas whose text holds every word typed stay; the
 * others, and the contents' links to them, are hidden. The form is invisible until this runs (its
 * place kept, so that nothing below it moves when it appears).
 */
export const REFERENCE_SCRIPT = `(() => {
  const form = document.getElementById('search');
  const input = document.getElementById('filter');
  const status = document.getElementById('matches');
  const sections = [...document.querySelectorAll('section.op')];
  const texts = new Map();
  const links = new Map([...document.querySelectorAll('nav .ops a')].map((a) => [a.getAttribute('href').slice(1), a.parentElement]));
  form.classList.remove('off');
  form.addEventListener('submit', (event) => event.preventDefault());
  let timer = 0;
  const apply = () => {
    const words = input.value.toLowerCase().split(/\\s+/).filter(Boolean);
    let shown = 0;
    for (const section of sections) {
      if (!texts.has(section)) texts.set(section, section.textContent.toLowerCase());
      const match = words.every((word) => texts.get(section).includes(word));
      section.hidden = !match;
      const link = links.get(section.id);
      if (link) link.hidden = !match;
      if (match) shown++;
    }
    for (const tag of document.querySelectorAll('section.tag')) tag.hidden = !tag.querySelector('section.op:not([hidden])');
    status.textContent = words.length ? shown + ' of ' + sections.length + ' match' : '';
  };
  input.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(apply, 120);
  });
})();
`;
