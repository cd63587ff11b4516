// Lotsman's web page: pick a session, ask, read the streamed answer, expand citations, vote.
// It talks to the LangGraph server's own API (threads, runs/stream on the `lotsman` graph) and to three
// small endpoints under /lotsman/api/ (sessions, read, feedback). Text from the index, the answer and the
// server is always set as text (textContent, text nodes), never parsed as HTML.
"use strict";

// --- pure helpers (also loaded by tests/unit/test_web_page_js.py through node) -----------------------------

/** Split an SSE byte stream's text into complete events; returns [events, rest]. */
function parseSse(buffer) {
  const events = [];
  // A chunk may end between the \r and \n of one line break: keep that \r for the next chunk.
  const held = buffer.endsWith("\r") ? "\r" : "";
  const text = (held ? buffer.slice(0, -1) : buffer).replace(/\r\n?/g, "\n");
  const blocks = text.split("\n\n");
  const rest = blocks.pop() + held;
  for (const block of blocks) {
    let event = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") event = value;
      else if (field === "data") data.push(value);
    }
    if (data.length) events.push({ event, data: data.join("\n") });
  }
  return [events, rest];
}

/** The text of a message's content: a string, or a list of content blocks. */
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((b) => (typeof b === "string" ? b : b && b.type === "text" ? b.text || "" : "")).join("");
  }
  return "";
}

function citationLabel(c) {
  return `${c.path}:${c.start_line}-${c.end_line}`;
}

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/**
 * Cut an answer into text and citation segments. A citation is written `path:start-end`, `[path:start-end]`
 * or, in a chat answer, as a Markdown link with that label; only the citations the server verified become links.
 * Any other Markdown link shows as its literal text (an answer cannot plant a link to elsewhere).
 * Returns [{text}] and [{text, citation: index}] in order.
 */
function answerSegments(answer, citations) {
  const labels = citations.map(citationLabel);
  const byLabel = new Map(labels.map((l, i) => [l, i]));
  if (!labels.length) return answer ? [{ text: answer }] : [];
  const sorted = [...new Set(labels)].sort((a, b) => b.length - a.length);
  const plain = sorted.map(escapeRegExp).join("|");
  const re = new RegExp(`\\[(${plain})\\](?:\\([^)\\s]*\\))?|(${plain})`, "g");
  const out = [];
  let last = 0;
  for (let m; (m = re.exec(answer)); ) {
    const label = m[1] || m[2];
    // `docs/a.md:1-2` must not match inside `xdocs/a.md:1-23`.
    const before = answer[m.index - 1];
    const after = answer[m.index + m[0].length];
    if (!m[1] && ((before && /[\w./-]/.test(before)) || (after && /\d/.test(after)))) continue;
    if (m.index > last) out.push({ text: answer.slice(last, m.index) });
    out.push({ text: label, citation: byLabel.get(label) });
    last = m.index + m[0].length;
  }
  if (last < answer.length) out.push({ text: answer.slice(last) });
  return out;
}

/**
 * The block structure of a Markdown answer: fenced code, quotes, lists and paragraphs, as
 * [{type: "code", text} | {type: "quote", text} | {type: "list", ordered, items: [text]} | {type: "para", text}].
 * Only what the composer writes is recognised; everything else stays literal text.
 */
function answerBlocks(answer) {
  const lines = answer.replace(/\r\n?/g, "\n").split("\n");
  const blocks = [];
  const listItem = /^\s*(?:([-*])|(\d+)[.)])\s+(.*)$/;
  for (let i = 0; i < lines.length; ) {
    const line = lines[i];
    const fence = line.match(/^\s*```/);
    if (fence) {
      const body = [];
      for (i += 1; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i += 1) body.push(lines[i]);
      i += 1;
      blocks.push({ type: "code", text: body.join("\n") });
    } else if (/^\s*>/.test(line)) {
      const body = [];
      for (; i < lines.length && /^\s*>/.test(lines[i]); i += 1) body.push(lines[i].replace(/^\s*> ?/, ""));
      blocks.push({ type: "quote", text: body.join("\n") });
    } else if (listItem.test(line)) {
      const ordered = Boolean(line.match(listItem)[2]);
      const items = [];
      for (; i < lines.length; i += 1) {
        const m = lines[i].match(listItem);
        if (m) items.push(m[3]);
        else if (lines[i].trim() && /^\s+/.test(lines[i]) && items.length) items[items.length - 1] += `\n${lines[i].trim()}`;
        else break;
      }
      blocks.push({ type: "list", ordered, items });
    } else if (!line.trim()) {
      i += 1;
    } else {
      const body = [];
      for (; i < lines.length && lines[i].trim() && !/^\s*(```|>)/.test(lines[i]) && !listItem.test(lines[i]); i += 1) {
        body.push(lines[i]);
      }
      blocks.push({ type: "para", text: body.join("\n") });
    }
  }
  return blocks;
}

/** Inline code spans of a text run: [{text}, {text, code: true}]. */
function codeSpans(text) {
  const out = [];
  const re = /`([^`\n]+)`/g;
  let last = 0;
  for (let m; (m = re.exec(text)); ) {
    if (m.index > last) out.push({ text: text.slice(last, m.index) });
    out.push({ text: m[1], code: true });
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push({ text: text.slice(last) });
  return out;
}

if (typeof module !== "undefined" && module.exports) {
  module.exports = { parseSse, contentText, answerSegments, answerBlocks, codeSpans, citationLabel };
}

// --- the page -----------------------------------------------------------------------------------------------
if (typeof document !== "undefined") {
  const PAGE = "/lotsman/";
  // The LangGraph API is served from the same origin, at the root the page is mounted under.
  const apiRoot = location.pathname.slice(0, Math.max(0, location.pathname.lastIndexOf(PAGE)));
  const pageRoot = apiRoot + PAGE;
  const $ = (id) => document.getElementById(id);
  const state = { session: "", threadId: null, busy: false, turns: 0, sessionInfo: new Map(), abort: null };

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) node.append(child);
    return node;
  }

  function token() {
    return sessionStorage.getItem("lotsman-token") || "";
  }

  function headers(extra) {
    const h = { ...(extra || {}) };
    if (token()) h.Authorization = `Bearer ${token()}`;
    return h;
  }

  class ApiError extends Error {
    constructor(message, status) {
      super(message);
      this.status = status;
    }
  }

  async function errorOf(res) {
    let message = `${res.status} ${res.statusText}`;
    try {
      const body = await res.json();
      message = body.error || body.detail || body.message || message;
    } catch (_) { /* not JSON */ }
    if (res.status === 401 || res.status === 403) showTokenForm();
    return new ApiError(typeof message === "string" ? message : JSON.stringify(message), res.status);
  }

  async function getJson(url) {
    const res = await fetch(url, { headers: headers() });
    if (!res.ok) throw await errorOf(res);
    return res.json();
  }

  async function postJson(url, body, signal) {
    const res = await fetch(url, {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
      signal,
    });
    if (!res.ok) throw await errorOf(res);
    return res;
  }

  function notice(text, isError) {
    const n = $("notice");
    n.textContent = text || "";
    n.hidden = !text;
    n.classList.toggle("error", Boolean(isError));
  }

  function showTokenForm() {
    $("token-form").hidden = false;
  }

  // --- sessions ---------------------------------------------------------------------------------------------
  async function loadSessions() {
    const select = $("session");
    try {
      const { sessions } = await getJson(`${pageRoot}api/sessions`);
      select.replaceChildren();
      if (!sessions.length) {
        select.append(el("option", { value: "", text: "нет сессий" }));
        notice("Нет проиндексированных репозиториев: выполните `lotsman index PATH --session NAME` и обновите страницу.");
        return;
      }
      for (const s of sessions) {
        state.sessionInfo.set(s.name, s);
        const revision = s.revision ? ` (${s.revision})` : "";
        const title = `записей в индексе: ${s.rows}; embedder ${s.embedder}; обновлена ${s.updated_at || "?"}`;
        select.append(el("option", { value: s.name, title, text: `${s.name}${revision}` }));
      }
      const wanted = new URLSearchParams(location.search).get("session") || localStorage.getItem("lotsman-session");
      if (wanted && sessions.some((s) => s.name === wanted)) select.value = wanted;
      select.disabled = false;
      chooseSession(select.value);
      notice("");
    } catch (err) {
      notice(`Не удалось получить список сессий: ${err.message}`, true);
    }
  }

  function chooseSession(name) {
    state.session = name;
    localStorage.setItem("lotsman-session", name);
    newThread();
  }

  function newThread() {
    if (state.abort) state.abort.abort();
    state.threadId = null;
    delete $("conversation").dataset.thread;
    $("conversation").replaceChildren();
    $("question").focus();
  }

  // --- one turn -----------------------------------------------------------------------------------------------
  function turnView(question) {
    state.turns += 1;
    const id = `t${state.turns}`;
    const text = el("div", { class: "answer-text", text: "Ищу ответ…" });
    const answer = el("section", { class: "answer pending", "aria-label": "Ответ" }, text);
    const turn = el("article", { class: "turn", id, "data-turn": String(state.turns) },
      el("div", { class: "question", text: question }), answer);
    $("conversation").append(turn);
    turn.scrollIntoView({ block: "end" });
    return { id, turn, answer, text };
  }

  async function createThread(signal) {
    const res = await postJson(`${apiRoot}/threads`, {}, signal);
    return (await res.json()).thread_id;
  }

  /** Run the question on the thread; stream tokens into `view`; resolve to the run's final state. */
  async function streamRun(question, view, signal) {
    const res = await postJson(`${apiRoot}/threads/${encodeURIComponent(state.threadId)}/runs/stream`, {
      assistant_id: "lotsman",
      input: { messages: [{ role: "human", content: question }] },
      context: { rag_session_id: state.session },
      stream_mode: ["messages-tuple", "values"],
      on_disconnect: "cancel",  // «Остановить» closes the stream: the server cancels the run
    }, signal);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    let streamed = "";
    let chunks = 0;
    const run = { runId: null, values: null, error: null };
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      const [events, rest] = parseSse(buffer);
      buffer = rest;
      for (const { event, data } of events) {
        const payload = JSON.parse(data);
        if (event === "metadata") run.runId = payload.run_id;
        else if (event === "values") run.values = payload;
        else if (event === "error") run.error = payload.message || payload.error || data;
        else if (event === "messages" && Array.isArray(payload)) {
          const [chunk] = payload;
          if (!chunk || !String(chunk.type).startsWith("AI")) continue;
          const piece = contentText(chunk.content);
          // Tokens arrive as AIMessageChunk pieces; an answer composed offline arrives whole.
          if (chunk.type === "AIMessageChunk") {
            streamed += piece;
            chunks += 1;
            view.answer.dataset.streamedChunks = String(chunks);  // how the answer arrived (tests read it)
          } else streamed = piece;
          if (streamed) {
            view.text.textContent = streamed;
            view.answer.classList.remove("pending");
          }
        }
      }
      if (done) break;
    }
    if (run.error) throw new ApiError(run.error, 0);
    return run;
  }

  function renderAnswer(view, question, run) {
    const values = run.values || {};
    const answer = typeof values.answer === "string" ? values.answer : view.text.textContent;
    const citations = Array.isArray(values.citations) ? values.citations : [];
    view.answer.classList.remove("pending");
    view.answer.classList.toggle("abstained", values.abstained === true);
    const sources = el("ol", { class: "sources", "aria-label": "Источники" });
    const items = citations.map((c, i) => sourceItem(view, c, i));
    const inline = (text, parent) => {
      for (const seg of answerSegments(text, citations)) {
        const i = seg.citation;
        if (i !== undefined) {
          parent.append(citationLink(view, citations[i], i, items[i]));
          continue;
        }
        for (const span of codeSpans(seg.text)) {
          parent.append(span.code ? el("code", { text: span.text }) : document.createTextNode(span.text));
        }
      }
    };
    view.text.replaceChildren(...answerBlocks(answer).map((block) => blockView(block, inline)));
    if (items.length) {
      sources.append(...items.map((item) => item.li));
      view.answer.append(el("div", { class: "sources-title", text: "Источники (нажмите, чтобы показать строки из индекса)" }),
        sources);
    }
    const meta = [];
    if (values.abstained === true) meta.push("в индексе нет ответа на этот вопрос");
    const info = state.sessionInfo.get(state.session);
    if (info && info.revision) meta.push(`индекс ревизии ${info.revision}`);
    if (values.answer_mode === "offline") meta.push("ответ собран из найденных фрагментов, без LLM");
    if (meta.length) view.answer.append(el("div", { class: "meta", text: meta.join(" · ") }));
    view.answer.append(voteBar(question, answer, citations, run.runId));
  }

  /** One block of the answer as elements; `inline(text, parent)` fills text with citations and code spans. */
  function blockView(block, inline) {
    if (block.type === "code") return el("pre", { class: "code" }, el("code", { text: block.text }));
    if (block.type === "list") {
      const list = el(block.ordered ? "ol" : "ul");
      for (const item of block.items) {
        const li = el("li");
        inline(item, li);
        list.append(li);
      }
      return list;
    }
    const node = el(block.type === "quote" ? "blockquote" : "p");
    inline(block.text, node);
    return node;
  }

  function citationLink(view, citation, index, item) {
    const link = el("a", { class: "citation", href: `#${view.id}-src-${index}`, "aria-expanded": "false",
      "data-path": citation.path, "data-start": String(citation.start_line), "data-end": String(citation.end_line),
      text: citationLabel(citation) });
    link.addEventListener("click", (ev) => {
      ev.preventDefault();
      item.toggle();
    });
    item.links.push(link);
    return link;
  }

  function sourceItem(view, citation, index) {
    const lines = el("div", { class: "lines", hidden: "" });
    const li = el("li", { id: `${view.id}-src-${index}`, class: "source" });
    const item = { li, lines, links: [], loaded: false };
    const head = citationLink(view, citation, index, item);
    li.append(head, lines);
    item.toggle = async () => {
      const open = lines.hidden;
      lines.hidden = !open;
      for (const l of item.links) l.setAttribute("aria-expanded", String(open));
      if (open && !item.loaded) {
        item.loaded = true;
        await loadLines(citation, lines);
      }
      if (open) li.scrollIntoView({ block: "nearest" });
    };
    return item;
  }

  async function loadLines(citation, box) {
    box.replaceChildren(el("div", { class: "line", text: "загрузка…" }));
    const q = new URLSearchParams({ session: state.session, path: citation.path,
      start_line: String(citation.start_line), end_line: String(citation.end_line) });
    try {
      const data = await getJson(`${pageRoot}api/read?${q}`);
      box.replaceChildren(...data.lines.map((line) => el("div", { class: "line" },
        el("span", { class: "no", text: String(line.number) }), el("span", { class: "text", text: line.text }))));
    } catch (err) {
      box.classList.add("error");
      box.replaceChildren(document.createTextNode(`Не удалось прочитать строки: ${err.message}`));
    }
  }

  // --- votes --------------------------------------------------------------------------------------------------
  const SVG = "http://www.w3.org/2000/svg";

  /** A thumb drawn inline (no icon font or emoji font is needed on the reader's machine). */
  function thumbIcon() {
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("viewBox", "0 0 24 24");
    svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("class", "icon");
    const path = document.createElementNS(SVG, "path");
    path.setAttribute("d", "M2 21h4V9H2v12zm20-11c0-1.1-.9-2-2-2h-6.3l1-4.6v-.3c0-.4-.2-.8-.4-1.1L13.2 1 "
      + "6.6 7.6C6.2 7.9 6 8.4 6 9v10c0 1.1.9 2 2 2h9c.8 0 1.5-.5 1.8-1.2l3-7.1c.1-.2.2-.5.2-.7v-2z");
    path.setAttribute("fill", "currentColor");
    svg.append(path);
    return svg;
  }

  function voteBar(question, answer, citations, runId) {
    const bar = el("div", { class: "vote", role: "group", "aria-label": "Оценка ответа" });
    const up = el("button", { type: "button", class: "thumb up", "aria-pressed": "false", title: "Ответ помог" },
      thumbIcon(), document.createTextNode(" Помогло"));
    const down = el("button", { type: "button", class: "thumb down", "aria-pressed": "false", title: "Ответ не помог" },
      thumbIcon(), document.createTextNode(" Не помогло"));
    const comment = el("textarea", { class: "comment", maxlength: "2000", hidden: "",
      placeholder: "Комментарий (необязательно): что было не так или чего не хватило" });
    const send = el("button", { type: "button", class: "send", hidden: "", text: "Отправить оценку" });
    const status = el("span", { class: "status", role: "status" });
    let score = 0;
    for (const [button, value] of [[up, 1], [down, -1]]) {
      button.addEventListener("click", () => {
        score = value;
        up.setAttribute("aria-pressed", String(value === 1));
        down.setAttribute("aria-pressed", String(value === -1));
        comment.hidden = false;
        send.hidden = false;
        comment.focus();
      });
    }
    send.addEventListener("click", async () => {
      send.disabled = true;
      status.className = "status";
      status.textContent = "отправляю…";
      try {
        await postJson(`${pageRoot}api/feedback`, { session: state.session, score, question, answer, citations,
          comment: comment.value, run_id: runId, thread_id: state.threadId });
        for (const b of [up, down, comment]) b.disabled = true;
        send.hidden = true;
        status.className = "status done";
        status.textContent = "Спасибо, оценка сохранена";
      } catch (err) {
        send.disabled = false;
        status.className = "status failed";
        status.textContent = `Оценка не сохранена: ${err.message}`;
      }
    });
    bar.append(up, down, comment, send, status);
    return bar;
  }

  // --- the form -----------------------------------------------------------------------------------------------
  async function ask(question) {
    const view = turnView(question);
    const controller = new AbortController();
    state.abort = controller;
    try {
      if (!state.threadId) {
        state.threadId = await createThread(controller.signal);
        $("conversation").dataset.thread = state.threadId;
      }
      renderAnswer(view, question, await streamRun(question, view, controller.signal));
    } catch (err) {
      if (controller.signal.aborted) {
        const partial = view.answer.classList.contains("pending") ? "" : view.text.textContent;
        view.answer.classList.remove("pending");
        view.answer.classList.add("stopped");
        view.text.textContent = partial;
        view.answer.append(el("div", { class: "meta", text: "Остановлено: ответ не дописан." }));
      } else {
        view.answer.classList.remove("pending");
        view.answer.classList.add("failed");
        view.text.textContent = `Ошибка: ${err.message}`;
      }
    } finally {
      state.abort = null;
    }
    if (view.turn.isConnected) view.turn.scrollIntoView({ block: "end" });
  }

  function initAskPage() {
    $("ask-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const box = $("question");
      const question = box.value.trim();
      if (!question || state.busy) return;
      if (!state.session) {
        notice("Сначала выберите сессию.", true);
        return;
      }
      state.busy = true;
      $("ask").hidden = true;
      $("stop").hidden = false;
      box.value = "";
      try {
        await ask(question);
      } finally {
        state.busy = false;
        $("ask").hidden = false;
        $("stop").hidden = true;
        box.focus();
      }
    });

    $("question").addEventListener("keydown", (ev) => {
      if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        $("ask-form").requestSubmit();
      }
    });

    $("session").addEventListener("change", (ev) => chooseSession(ev.target.value));
    $("new-thread").addEventListener("click", newThread);
    $("stop").addEventListener("click", () => state.abort && state.abort.abort());
    loadSessions();
  }

  // --- the citation view (/lotsman/read?session=S&path=P&start=N&end=M: where chat answers' links lead) ----
  const CONTEXT_LINES = 5;

  /** The lines to show around a citation: a few before and after it, within the server's read limit. */
  function viewRange(start, end) {
    const spare = Math.max(0, Math.min(CONTEXT_LINES, Math.floor((400 - (end - start + 1)) / 2)));
    return [Math.max(1, start - spare), end + spare];
  }

  async function loadCitationView() {
    const params = new URLSearchParams(location.search);
    const session = params.get("session") || "";
    const path = params.get("path") || "";
    const start = Number.parseInt(params.get("start") || "", 10);
    const end = Number.parseInt(params.get("end") || params.get("start") || "", 10);
    $("cited").textContent = Number.isFinite(start) ? `${path}:${start}-${end}` : path;
    $("cited-session").textContent = session;
    const box = $("citation-lines");
    if (!session || !path || !Number.isFinite(start) || !Number.isFinite(end)) {
      box.classList.add("error");
      box.replaceChildren(document.createTextNode("В ссылке нет session, path, start и end."));
      return;
    }
    const [from, to] = viewRange(start, end);
    const q = new URLSearchParams({ session, path, start_line: String(from), end_line: String(to) });
    try {
      const data = await getJson(`${pageRoot}api/read?${q}`);
      box.classList.remove("error");
      box.replaceChildren(...data.lines.map((line) => el("div",
        { class: line.number >= start && line.number <= end ? "line cited" : "line" },
        el("span", { class: "no", text: String(line.number) }), el("span", { class: "text", text: line.text }))));
      const first = box.querySelector(".cited");
      if (first) first.scrollIntoView({ block: "center" });
      if (data.commit) $("cited-session").textContent = `${session} @ ${String(data.commit).slice(0, 10)}`;
    } catch (err) {
      box.classList.add("error");
      box.replaceChildren(document.createTextNode(`Не удалось прочитать строки: ${err.message}`));
    }
  }

  const reload = $("citation-view") ? loadCitationView : loadSessions;
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem("lotsman-token", $("token").value.trim());
    $("token-form").hidden = true;
    reload();
  });
  if ($("citation-view")) loadCitationView();
  else initAskPage();
}
