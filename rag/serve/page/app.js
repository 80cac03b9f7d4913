// The search page of rag serve: plain JavaScript over the JSON API (/v1), no build step.
"use strict";

const $ = (id) => document.getElementById(id);
let token = localStorage.getItem("rag-token") || "";

function headers() {
  const h = { "Content-Type": "application/json" };
  if (token) h.Authorization = "Bearer " + token;
  return h;
}

function say(text, isError) {
  $("message").textContent = text || "";
  $("message").className = isError ? "error" : "";
}

async function api(path, options) {
  const response = await fetch(path, Object.assign({ headers: headers() }, options || {}));
  if (response.status === 401) {
    $("token-form").hidden = false;
    throw new Error("this server needs an access token");
  }
  if (!response.ok) {
    let message = response.statusText;
    try { message = (await response.json()).error || message; } catch (e) { /* not JSON */ }
    throw new Error(message);
  }
  return response;
}

function el(tag, props, children) {
  const node = document.createElement(tag);
  Object.assign(node, props || {});
  for (const child of children || []) node.append(child);
  return node;
}

function lines(item) {
  if (item.startLine == null) return item.path;
  return item.path + ":" + item.startLine + (item.endLine != null && item.endLine !== item.startLine ? "-" + item.endLine : "");
}

function readLink(text, item) {
  // A Confluence page opens where it lives; a file's lines open in the reader below.
  if (item.url) return el("a", { href: item.url, target: "_blank", rel: "noopener", textContent: text });
  const link = el("a", { href: "#chunk-" + item.chunkId, textContent: text });
  link.addEventListener("click", (event) => { event.preventDefault(); openChunk(item.chunkId, text); });
  return link;
}

async function openChunk(chunkId, title) {
  try {
    const text = await (await api("/v1/read?chunkId=" + chunkId + "&context=10")).json();
    $("reader-title").textContent = text.sourceName + " / " + (title || text.path);
    $("reader-text").textContent = text.content;
    $("reader").hidden = false;
    $("reader").scrollIntoView({ behavior: "smooth", block: "nearest" });
  } catch (error) { say(error.message, true); }
}

function filters() {
  const body = {};
  if ($("source").value) body.source = $("source").value;
  if ($("type").value) body.sourceType = $("type").value;
  const languages = $("language").value.split(/[ ,]+/).filter(Boolean);
  if (languages.length) body.language = languages;
  return body;
}

async function search(event) {
  event.preventDefault();
  const query = $("query").value.trim();
  if (!query) return;
  $("results").replaceChildren();
  say("searching…");
  try {
    const started = performance.now();
    const out = await (await api("/v1/search", { method: "POST", body: JSON.stringify(Object.assign({ query }, filters())) })).json();
    const ms = Math.round(performance.now() - started);
    say(out.results.length + (out.results.length === 1 ? " result" : " results") + " in " + ms + " ms" + (out.warnings.length ? " — " + out.warnings.join("; ") : ""));
    for (const hit of out.results) {
      const name = (hit.coordinates.fqn || hit.coordinates.headerPath || "");
      $("results").append(el("li", { className: "result" }, [
        el("div", { className: "where" }, [readLink(lines(hit), hit), el("span", { className: "source", textContent: hit.sourceName + " · " + (hit.language || hit.sourceType) })]),
        el("div", { className: "name", textContent: name }),
        el("pre", { textContent: hit.snippet }),
      ]));
    }
  } catch (error) { say(error.message, true); }
}

function citeLinks(text, sources) {
  // The answer's [n] become links to source n.
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of text.matchAll(/\[(\d+)\]/g)) {
    const source = sources.get(Number(match[1]));
    if (!source) continue;
    fragment.append(text.slice(last, match.index));
    const link = readLink(match[0], source);
    link.className = "cite";
    link.title = source.location;
    fragment.append(link);
    last = match.index + match[0].length;
  }
  fragment.append(text.slice(last));
  return fragment;
}

async function ask(event) {
  event.preventDefault();
  const question = $("question").value.trim();
  if (!question) return;
  $("answer-panel").hidden = false;
  $("answer").replaceChildren();
  $("citations").replaceChildren();
  say("retrieving…");
  const sources = new Map();
  let answer = "";
  try {
    const response = await api("/v1/ask", { method: "POST", body: JSON.stringify(Object.assign({ question }, filters())) });
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) name = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trimStart();
        }
        if (!data) continue;
        const payload = JSON.parse(data);
        if (name === "sources") {
          for (const s of payload.sources) sources.set(s.number, s);
          say("answering from " + payload.sources.length + " sources…");
        } else if (name === "token") {
          answer += payload.text;
          $("answer").replaceChildren(citeLinks(answer, sources));
        } else if (name === "done") {
          $("answer").replaceChildren(citeLinks(payload.answer, sources));
          for (const c of payload.citations) {
            const source = Object.assign({}, sources.get(c.number) || {}, { chunkId: c.chunkId });
            $("citations").append(el("li", { className: "citation" + (c.cited ? "" : " uncited"), value: c.number },
              [readLink(c.location, source), document.createTextNode(" " + c.sourceName)]));
          }
          say("answered in " + Math.round(payload.timings.totalMs) + " ms");
        } else if (name === "error") {
          say(payload.error, true);
        }
      }
    }
  } catch (error) { say(error.message, true); }
}

function showTab(name) {
  for (const tab of ["search", "ask"]) {
    $("tab-" + tab).classList.toggle("active", tab === name);
    $("tab-" + tab).setAttribute("aria-selected", String(tab === name));
    $(tab + "-form").hidden = tab !== name;
  }
  $("answer-panel").hidden = name !== "ask" || !$("answer").textContent;
  say("");
}

async function loadSources() {
  try {
    const out = await (await api("/v1/sources?limit=1000")).json();
    for (const s of out.sources) $("source").append(el("option", { value: s.name, textContent: s.name }));
  } catch (error) { say(error.message, true); }
}

$("search-form").addEventListener("submit", search);
$("ask-form").addEventListener("submit", ask);
$("tab-search").addEventListener("click", () => showTab("search"));
$("tab-ask").addEventListener("click", () => showTab("ask"));
$("reader-close").addEventListener("click", () => { $("reader").hidden = true; });
$("token-form").addEventListener("submit", (event) => {
  event.preventDefault();
  token = $("token").value.trim();
  localStorage.setItem("rag-token", token);
  $("token-form").hidden = true;
  say("");
  $("source").replaceChildren(el("option", { value: "", textContent: "all" }));
  loadSources();
});
loadSources();
