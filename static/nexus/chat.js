/*
 * The chat window: composer, streamed replies, summary cards, the
 * summarization indicator, the search box and the context inspector.
 *
 * Every piece of user or model text goes into the page through textContent
 * or text nodes, never as markup; search highlights are <mark> elements
 * built around text nodes. Every request carries the session cookie
 * and the CSRF token.
 */
(function () {
  "use strict";

  var configNode = document.getElementById("chat-config");
  if (!configNode) {
    return;
  }
  var config = JSON.parse(configNode.textContent);
  var urls = config.urls;

  var el = {
    layout: document.getElementById("chat-layout"),
    conversation: document.getElementById("conversation"),
    messages: document.getElementById("messages"),
    emptyChat: document.getElementById("empty-chat"),
    loadEarlier: document.getElementById("load-earlier"),
    composer: document.getElementById("composer"),
    input: document.getElementById("composer-input"),
    send: document.getElementById("send-button"),
    sessionAlert: document.getElementById("session-alert"),
    liveStatus: document.getElementById("live-status"),
    statEpisodes: document.getElementById("stat-episodes"),
    statEpisodesUnit: document.getElementById("stat-episodes-unit"),
    statTokens: document.getElementById("stat-tokens"),
    headerIndicator: document.getElementById("header-indicator"),
    headerFailed: document.getElementById("header-failed"),
    buttonIndicator: document.getElementById("button-indicator"),
    memoryToggle: document.getElementById("memory-toggle"),
    memoryPanel: document.getElementById("memory-panel"),
    memoryClose: document.getElementById("memory-close"),
    statusLine: document.getElementById("summary-status-line"),
    summaryError: document.getElementById("summary-error"),
    summaryErrorText: document.getElementById("summary-error-text"),
    cards: document.getElementById("summary-cards"),
    cardsEmpty: document.getElementById("summaries-empty"),
    contextOpen: document.getElementById("context-open"),
    contextDialog: document.getElementById("context-dialog"),
    contextClose: document.getElementById("context-close"),
    contextForm: document.getElementById("context-form"),
    contextQuestion: document.getElementById("context-question"),
    contextState: document.getElementById("context-state"),
    contextResult: document.getElementById("context-result"),
    contextTokens: document.getElementById("context-tokens"),
    contextFull: document.getElementById("context-full"),
    contextSaving: document.getElementById("context-saving"),
    contextParts: document.getElementById("context-parts"),
    contextOmitted: document.getElementById("context-omitted"),
    contextPrompt: document.getElementById("context-prompt"),
    contextRetrieved: document.getElementById("context-retrieved"),
    contextRetrievedCount: document.getElementById("context-retrieved-count"),
    contextRetrievedList: document.getElementById("context-retrieved-list"),
    contextNewest: document.getElementById("context-newest"),
    contextNewestList: document.getElementById("context-newest-list"),
    searchForm: document.getElementById("chat-search"),
    searchInput: document.getElementById("chat-search-input"),
    searchResults: document.getElementById("search-results"),
    searchState: document.getElementById("search-state"),
    searchHits: document.getElementById("search-hits"),
    searchClose: document.getElementById("search-close"),
  };

  var csrfInput = el.composer.querySelector("input[name=csrfmiddlewaretoken]");

  var state = {
    sending: false,
    contextPassages: {}, // the inspector's last context: episode id -> quoted [start, end] offsets
    sessionGone: false,
    summaryState: null,
    summariesDirty: false,
    lastStatus: null,
    statusSeen: false,
    statusUpdatedAt: null,
    pollTimer: null,
    fastPollUntil: 0,
    earlierUrl: config.earlierUrl || null,
    hasEarlier: Boolean(config.hasEarlier && config.earlierUrl),
    loadingEarlier: false,
    // The Idempotency-Key of the last turn that did not end in a reply, with its text:
    // sending that text again reuses it, so a turn stored before its answer was lost is stored once.
    unanswered: null,
  };

  var ACTIVE_STATES = { queued: true, running: true };
  var FAST_POLL_MS = 1000;
  var IDLE_POLL_MS = 20000;
  var FAST_WINDOW_MS = 5000;

  /* ---------------------------------------------------------------- utils */

  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    return match ? decodeURIComponent(match[1]) : csrfInput ? csrfInput.value : "";
  }

  function request(url, options) {
    options = options || {};
    var headers = Object.assign(
      { Accept: "application/json", "X-CSRFToken": csrfToken(), "X-Requested-With": "fetch" },
      options.headers || {}
    );
    return fetch(url, Object.assign({}, options, { headers: headers, credentials: "same-origin" }));
  }

  function ApiError(status, message) {
    this.status = status;
    this.message = message;
  }

  async function getJson(url) {
    var response;
    try {
      response = await request(url);
    } catch (err) {
      throw new ApiError(0, "Could not reach the server.");
    }
    if (!response.ok) {
      throw new ApiError(response.status, await errorMessage(response));
    }
    return response.json();
  }

  async function errorMessage(response) {
    var detail = await readDetail(response);
    if (detail) return detail;
    if (response.status === 401 || response.status === 403) return "You are signed out. Sign in again to continue.";
    return "The server answered " + response.status + ".";
  }

  /* The message of an error answer: JSON ({"detail": ...} or field errors)
     or, when the chat endpoint answered in its event-stream format, the
     first event's "error". */
  async function readDetail(response) {
    var text = "";
    try {
      text = await response.text();
    } catch (err) {
      return "";
    }
    var data = null;
    try {
      data = JSON.parse(text);
    } catch (err) {
      data = parseEvent(text.replace(/\r\n/g, "\n").split("\n\n")[0]);
    }
    if (!data || typeof data !== "object") return "";
    if (typeof data.detail === "string") return data.detail;
    if (typeof data.error === "string") return data.error;
    var first = Object.keys(data)[0];
    if (first === undefined) return "";
    var value = data[first];
    return first + ": " + (Array.isArray(value) ? value.join(" ") : String(value));
  }

  function make(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function formatTime(iso) {
    var date = new Date(iso);
    if (isNaN(date.getTime())) return "";
    return date.toLocaleString([], { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  }

  function timeElement(iso) {
    var node = make("time", null, formatTime(iso));
    node.setAttribute("datetime", iso);
    node.title = new Date(iso).toLocaleString();
    return node;
  }

  function plural(n, one, many) {
    return n + " " + (n === 1 ? one : many);
  }

  function announce(text) {
    el.liveStatus.textContent = "";
    window.setTimeout(function () {
      el.liveStatus.textContent = text;
    }, 50);
  }

  function nearBottom() {
    var c = el.conversation;
    return c.scrollHeight - c.scrollTop - c.clientHeight < 120;
  }

  function scrollToBottom() {
    el.conversation.scrollTop = el.conversation.scrollHeight;
  }

  /* ------------------------------------------------------------- messages */

  function episodeMeta(ep) {
    var meta = make("p", "msg-meta");
    meta.appendChild(document.createTextNode("#" + ep.position + " · " + plural(ep.token_count || 0, "token", "tokens") + " · "));
    if (ep.created_at) meta.appendChild(timeElement(ep.created_at));
    return meta;
  }

  /* How the recent window went in, as templates/sessions/offline_memory_window.html says it. */
  function windowText(recent, cut) {
    if (recent === 1) return "the last exchange" + (cut ? ", in part" : " in full");
    return "the last " + recent + " exchanges" + (cut ? ", the newest in part" : " in full");
  }

  /* What memory found for an offline reply (the episode's
     metadata.offline_memory), as templates/sessions/offline_memory.html
     renders it: the best earlier exchanges with their labels, the gist of
     the summaries, and how the recent exchanges go in (in full, or the
     newest in part). */
  function buildMemory(memory) {
    if (!memory || typeof memory !== "object") return null;
    var box = make("section", "offline-memory");
    box.setAttribute("aria-label", "What Nexus remembers for this message");
    var retrieved = Array.isArray(memory.retrieved) ? memory.retrieved : [];
    var total = Number(memory.retrieved_count) || 0;
    var recent = Number(memory.recent) || 0;
    var summary = typeof memory.summary === "string" ? memory.summary : "";
    if (retrieved.length) {
      var head = "Relevant earlier exchanges";
      if (total > retrieved.length) head += " (" + retrieved.length + " of " + total + ")";
      box.appendChild(make("p", "offline-memory-head", head));
      var list = make("ol", "offline-memory-list");
      retrieved.forEach(function (item) {
        var entry = make("li", "offline-memory-item");
        entry.appendChild(make("span", "offline-memory-label", item.label));
        entry.appendChild(document.createTextNode(" " + String(item.text || "")));
        if (item.reply) {
          entry.appendChild(document.createTextNode(" "));
          entry.appendChild(make("span", "offline-memory-reply", "Reply: " + item.reply));
        }
        list.appendChild(entry);
      });
      box.appendChild(list);
    }
    if (summary) {
      var gist = make("p", "offline-memory-gist");
      gist.appendChild(make("span", "offline-memory-head", "From the summaries"));
      gist.appendChild(document.createTextNode(" " + summary));
      box.appendChild(gist);
    }
    var note;
    var cut = memory.newest_in_part === true;
    if (memory.whole) {
      note = "The whole conversation goes in full (" + plural(recent, "exchange", "exchanges") +
        "): it costs less than a shorter context would.";
    } else if (retrieved.length || summary) {
      note = recent ? "And " + windowText(recent, cut) + "." : "";
    } else if (memory.earlier === "quoted") {
      note = "Older exchanges in brief (not summarised yet)" + (recent ? ", and " + windowText(recent, cut) : "") + ".";
    } else if (memory.earlier === "left_out") {
      note = "Only " + windowText(recent, cut) + ": nothing earlier is relevant enough to this message.";
    } else if (recent && cut) {
      note = (recent === 1 ? "The earlier exchange, in part" : "The " + recent + " earlier exchanges, the newest in part") +
        ": it is too long to send whole.";
    } else if (recent) {
      note = "The " + plural(recent, "earlier exchange", "earlier exchanges") +
        " in full: the conversation is still short enough to send whole.";
    } else {
      note = "Nothing yet: this is the first message of the conversation.";
    }
    if (note) box.appendChild(make("p", "offline-memory-recent", note));
    return box;
  }

  function buildEpisode(ep) {
    var item = make("li", "episode");
    item.dataset.episodeId = ep.id;
    item.id = "episode-" + ep.id;
    var user = make("div", "msg msg-user");
    user.appendChild(make("p", "msg-body", ep.user_input));
    var reply = make("div", "msg msg-assistant");
    reply.appendChild(make("p", "msg-body", ep.response));
    reply.appendChild(episodeMeta(ep));
    item.appendChild(user);
    item.appendChild(reply);
    var memory = buildMemory(ep.metadata && ep.metadata.offline_memory);
    if (memory) item.appendChild(memory);
    return item;
  }

  function updateEmptyState() {
    el.emptyChat.hidden = el.messages.children.length > 0;
  }

  /* One exchange while it is being sent and streamed. */
  function Turn(text) {
    this.item = make("li", "episode is-pending");
    this.user = make("div", "msg msg-user");
    this.user.appendChild(make("p", "msg-body", text));
    this.reply = make("div", "msg msg-assistant is-streaming");
    this.body = make("p", "msg-body");
    this.typing = make("span", "typing");
    this.typing.setAttribute("aria-label", "The assistant is writing");
    for (var i = 0; i < 3; i++) this.typing.appendChild(make("span", "typing-dot"));
    this.body.appendChild(this.typing);
    this.textNode = document.createTextNode("");
    this.body.appendChild(this.textNode);
    this.reply.appendChild(this.body);
    this.item.appendChild(this.user);
    this.item.appendChild(this.reply);
    this.finished = false;
    el.messages.appendChild(this.item);
    updateEmptyState();
    scrollToBottom();
  }

  Turn.prototype.appendText = function (chunk) {
    if (!chunk) return;
    var follow = nearBottom();
    if (this.typing.parentNode) this.typing.remove();
    this.textNode.appendData(chunk);
    if (follow) scrollToBottom();
  };

  Turn.prototype.complete = function (ep) {
    // Read before the memory block below makes the page taller.
    var follow = nearBottom();
    this.finished = true;
    if (this.typing.parentNode) this.typing.remove();
    this.item.classList.remove("is-pending");
    this.reply.classList.remove("is-streaming");
    if (ep && typeof ep === "object") {
      if (ep.id !== undefined) {
        this.item.dataset.episodeId = ep.id;
        this.item.id = "episode-" + ep.id;
      }
      // The stored reply is the truth; it matches the streamed text unless
      // the server trimmed or completed it.
      if (typeof ep.response === "string" && ep.response !== this.textNode.data) {
        this.textNode.data = ep.response;
      }
      if (ep.id !== undefined) this.reply.appendChild(episodeMeta(ep));
      var memory = buildMemory(ep.metadata && ep.metadata.offline_memory);
      if (memory) this.item.appendChild(memory);
      if (ep.id !== undefined) watchNotes(ep.id, this.item);
    }
    if (follow || nearBottom()) scrollToBottom();
  };

  /* "Memory updated: …" under an exchange that made a note. Notes are found in
     the background after the reply is stored, so the page asks a few times. */
  function noteLine(note) {
    var line = make("p", "memory-updated");
    line.dataset.noteId = note.id;
    line.appendChild(document.createTextNode("Memory updated: "));
    var link = make("a", null, note.text);
    link.href = urls.memory + "#note-" + note.id;
    line.appendChild(link);
    return line;
  }

  function watchNotes(episodeId, item) {
    var delays = [700, 2000, 5000];
    async function look() {
      try {
        var data = await getJson(urls.notes + "?source_episode=" + encodeURIComponent(episodeId));
        (Array.isArray(data) ? data : data.results || []).forEach(function (note) {
          if (item.querySelector('.memory-updated[data-note-id="' + note.id + '"]')) return;
          item.appendChild(noteLine(note));
          announce("Memory updated: " + note.text);
        });
      } catch (error) {
        return; // a note shows on the Memory page and after a reload all the same
      }
      var next = delays.shift();
      if (next !== undefined) window.setTimeout(look, next);
    }
    window.setTimeout(look, delays.shift());
  }

  Turn.prototype.fail = function (message) {
    this.finished = true;
    if (this.typing.parentNode) this.typing.remove();
    this.item.classList.remove("is-pending");
    this.item.classList.add("is-failed");
    this.reply.classList.remove("is-streaming");
    this.reply.classList.add("msg-error");
    var partial = this.textNode.data;
    this.body.textContent = "";
    if (partial) {
      this.body.appendChild(make("span", "partial-reply", partial));
    }
    var note = make("p", "msg-error-text");
    note.setAttribute("role", "alert");
    note.textContent = message;
    this.reply.appendChild(note);
    this.user.appendChild(make("p", "msg-meta", "Not saved"));
    scrollToBottom();
  };

  /* --------------------------------------------------------------- stream */

  function parseEvent(raw) {
    var data = [];
    raw.split("\n").forEach(function (line) {
      if (line.indexOf("data:") === 0) {
        var value = line.slice(5);
        if (value.charAt(0) === " ") value = value.slice(1);
        data.push(value);
      }
    });
    if (!data.length) return null;
    try {
      return JSON.parse(data.join("\n"));
    } catch (err) {
      return null;
    }
  }

  /* Reads a text/event-stream body; returns when the stream ends. */
  async function readStream(body, turn) {
    var reader = body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";

    function handle(raw) {
      var payload = parseEvent(raw);
      if (!payload || turn.finished) return;
      if (typeof payload.error === "string" || payload.error) {
        turn.fail(String(payload.error));
      } else if (payload.done) {
        turn.complete(payload.episode);
      } else if (typeof payload.text === "string") {
        turn.appendText(payload.text);
      }
    }

    function drain() {
      buffer = buffer.replace(/\r\n/g, "\n");
      var index;
      while ((index = buffer.indexOf("\n\n")) !== -1) {
        var raw = buffer.slice(0, index);
        buffer = buffer.slice(index + 2);
        handle(raw);
      }
    }

    for (;;) {
      var result = await reader.read();
      if (result.done) break;
      buffer += decoder.decode(result.value, { stream: true });
      drain();
    }
    buffer += decoder.decode();
    drain();
    if (buffer.trim()) handle(buffer);
  }

  /* One key per turn: a new message gets a new one, the same message sent
     again after a failure the one it had. */
  function turnKey(text) {
    if (state.unanswered && state.unanswered.text === text) return state.unanswered.key;
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes); // randomUUID needs a secure context; this does not
    var key = "chat-" + Array.prototype.map.call(bytes, function (b) {
      return (b + 256).toString(16).slice(1);
    }).join("");
    state.unanswered = { text: text, key: key };
    return key;
  }

  async function sendMessage(text) {
    var key = turnKey(text);
    state.sending = true;
    el.composer.classList.add("is-busy");
    el.send.disabled = true;
    el.send.textContent = "Sending…";
    var turn = new Turn(text);
    // Keep an eye on the summarization state while the turn runs: a summary
    // can be queued (or, without a broker, run) before the reply is closed.
    state.fastPollUntil = Infinity;
    schedulePoll(FAST_POLL_MS);

    try {
      var response;
      try {
        response = await request(urls.chat, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            Accept: "text/event-stream",
            "Idempotency-Key": key,
          },
          body: JSON.stringify({ message: text }),
        });
      } catch (err) {
        turn.fail("Could not reach the server. Check the connection and send again.");
        restoreDraft(text);
        return;
      }

      if (!response.ok) {
        var message = await errorMessage(response);
        if (isAccessError(response.status) && (await checkAccess())) {
          turn.fail(response.status === 404 ? "This session no longer exists." : message);
        } else {
          turn.fail(message);
          restoreDraft(text);
        }
        return;
      }

      var type = response.headers.get("Content-Type") || "";
      if (type.indexOf("text/event-stream") !== -1 && response.body) {
        try {
          await readStream(response.body, turn);
        } catch (err) {
          if (!turn.finished) turn.fail("The connection broke before the reply finished.");
        }
        if (!turn.finished) turn.fail("The reply stopped before it finished.");
      } else {
        var data = await response.json();
        var episode = data && data.episode ? data.episode : data;
        if (episode && typeof episode.response === "string") turn.appendText(episode.response);
        turn.complete(episode);
      }

      if (turn.item.classList.contains("is-failed")) {
        restoreDraft(text);
      } else {
        state.unanswered = null;
        announce("Reply received.");
        refreshStats();
        state.summariesDirty = true;
        state.fastPollUntil = Date.now() + FAST_WINDOW_MS;
        schedulePoll(0);
      }
    } finally {
      if (state.fastPollUntil === Infinity) state.fastPollUntil = Date.now() + FAST_WINDOW_MS;
      state.sending = false;
      el.composer.classList.remove("is-busy");
      el.send.textContent = "Send";
      el.send.disabled = state.sessionGone;
      if (!state.sessionGone) el.input.focus();
    }
  }

  function restoreDraft(text) {
    if (!el.input.value.trim()) {
      el.input.value = text;
      autoGrow();
    }
  }

  async function refreshStats() {
    try {
      var session = await getJson(urls.session);
      if (typeof session.episode_count === "number") {
        el.statEpisodes.textContent = session.episode_count;
        el.statEpisodesUnit.textContent = session.episode_count === 1 ? "exchange" : "exchanges";
      }
      if (typeof session.total_tokens === "number") el.statTokens.textContent = session.total_tokens;
    } catch (err) {
      blockOnAccessError(err.status);
    }
  }

  /* ------------------------------------------------------------- composer */

  function autoGrow() {
    el.input.style.height = "auto";
    el.input.style.height = Math.min(el.input.scrollHeight, window.innerHeight * 0.4) + "px";
  }

  el.input.addEventListener("input", autoGrow);

  el.input.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.isComposing) return;
    if (event.shiftKey || event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    if (typeof el.composer.requestSubmit === "function") {
      el.composer.requestSubmit();
    } else {
      el.composer.dispatchEvent(new Event("submit", { cancelable: true }));
    }
  });

  el.composer.addEventListener("submit", function (event) {
    event.preventDefault();
    if (state.sending || state.sessionGone) return;
    var text = el.input.value;
    if (!text.trim()) {
      el.input.focus();
      return;
    }
    el.input.value = "";
    autoGrow();
    sendMessage(text);
  });

  /* ---------------------------------------------------- summarization state */

  function schedulePoll(delay) {
    window.clearTimeout(state.pollTimer);
    if (state.sessionGone) return;
    state.pollTimer = window.setTimeout(pollStatus, delay);
  }

  async function pollStatus() {
    var next = IDLE_POLL_MS;
    try {
      var status = await getJson(urls.status);
      applyStatus(status);
      if (ACTIVE_STATES[status.state] || Date.now() < state.fastPollUntil) next = FAST_POLL_MS;
    } catch (err) {
      if (isAccessError(err.status) && (await checkAccess())) return;
      el.statusLine.textContent = "Could not read the summarization state: " + err.message;
      next = 5000;
    }
    if (document.hidden && next === IDLE_POLL_MS) return; // resumes on visibilitychange
    schedulePoll(next);
  }

  function applyStatus(status) {
    var previous = state.summaryState;
    var current = status.state;
    var active = Boolean(ACTIVE_STATES[current]);
    state.summaryState = current;

    el.headerIndicator.hidden = !active;
    el.buttonIndicator.hidden = !active;
    el.memoryToggle.classList.toggle("is-summarising", active);
    el.layout.dataset.summaryState = current;

    var failed = current === "failed";
    el.headerFailed.hidden = !failed;
    el.summaryError.hidden = !failed;
    el.memoryToggle.classList.toggle("has-failure", failed);
    if (failed) {
      var error = status.last_error || "No error message was recorded.";
      el.summaryErrorText.textContent = error;
      el.headerFailed.title = error;
    } else {
      el.summaryErrorText.textContent = "";
      el.headerFailed.removeAttribute("title");
    }

    state.lastStatus = status;
    renderStatusLine();

    var wasActive = Boolean(previous && ACTIVE_STATES[previous]);
    // A run that started and ended between two polls (another client's
    // writes, a slow idle poll) still moved the state row's timestamp.
    var moved = state.statusSeen && status.updated_at && status.updated_at !== state.statusUpdatedAt;
    state.statusSeen = true;
    state.statusUpdatedAt = status.updated_at || null;
    if (!active && (wasActive || moved || state.summariesDirty)) {
      state.summariesDirty = false;
      refreshSummaries(wasActive || moved);
    }
  }

  function renderStatusLine() {
    var status = state.lastStatus;
    if (!status) return;
    var current = status.state;
    var failed = current === "failed";
    var pending = typeof status.pending_episodes === "number" ? status.pending_episodes : null;
    var line;
    if (current === "queued") {
      line = "Summarising… (queued)";
    } else if (current === "running") {
      line = "Summarising…" + (pending ? " " + plural(pending, "exchange", "exchanges") + " to fold in." : "");
    } else if (failed) {
      line = "Summarization failed; it is tried again later.";
    } else if (pending) {
      line = plural(pending, "exchange", "exchanges") + " not summarised yet.";
    } else {
      line = el.cards.children.length ? "Up to date." : "Nothing to summarise yet.";
    }
    el.statusLine.textContent = line;
    el.cardsEmpty.textContent = failed
      ? "No summaries yet."
      : "No summaries yet. They appear once the conversation passes the summary threshold.";
  }

  /* ------------------------------------------------------------ summaries */

  /* A summary row's range as people read it (sessions_app.labels.exchanges_label). */
  function exchangesLabel(summary) {
    var first = summary.first_position;
    var last = summary.last_position;
    return first === last ? "Exchange " + first : "Exchanges " + first + "–" + last;
  }

  function buildCard(summary) {
    var item = make("li", "summary-card" + (summary.curated ? " is-curated" : ""));
    item.dataset.summaryId = summary.id;
    var head = make("div", "summary-card-head");
    head.appendChild(
      make("h3", "summary-range", exchangesLabel(summary))
    );
    if (summary.curated) {
      var by = summary.curated_by_you ? "you" : summary.curated_by_staff ? "staff" : "";
      var mark = make("span", "curated-mark", by ? "Edited by " + by : "Curated");
      mark.title =
        (by === "you" ? "You edited this summary" : by ? "Edited by staff" : "Edited by hand") +
        "; automatic passes leave it alone";
      head.appendChild(mark);
    }
    item.appendChild(head);
    item.appendChild(make("p", "summary-text", summary.content));
    var meta = make("p", "summary-meta", plural(summary.token_count || 0, "token", "tokens") + " · updated ");
    if (summary.updated_at) meta.appendChild(timeElement(summary.updated_at));
    item.appendChild(meta);
    return item;
  }

  async function fetchAll(url) {
    var rows = [];
    var guard = 0;
    while (url && guard < 50) {
      var data = await getJson(url);
      if (Array.isArray(data)) return rows.concat(data);
      rows = rows.concat(data.results || []);
      url = data.next || null;
      guard += 1;
    }
    return rows;
  }

  async function refreshSummaries(announceChange) {
    var before = {};
    Array.prototype.forEach.call(el.cards.children, function (card) {
      before[card.dataset.summaryId] = card.querySelector(".summary-range").textContent + "\n" +
        card.querySelector(".summary-text").textContent;
    });
    var rows;
    try {
      rows = await fetchAll(urls.summaries);
    } catch (err) {
      if (isAccessError(err.status)) checkAccess();
      return;
    }
    rows.sort(function (a, b) {
      return a.first_episode_id - b.first_episode_id || a.id - b.id;
    });
    var changed = false;
    var fragment = document.createDocumentFragment();
    rows.forEach(function (summary) {
      var card = buildCard(summary);
      var key = exchangesLabel(summary) + "\n" + summary.content;
      if (before[String(summary.id)] !== key) {
        card.classList.add("is-fresh");
        changed = true;
      }
      fragment.appendChild(card);
    });
    if (Object.keys(before).length !== rows.length) changed = true;
    el.cards.replaceChildren(fragment);
    el.cardsEmpty.hidden = rows.length > 0;
    renderStatusLine();
    el.memoryToggle.dataset.count = rows.length;
    if (changed && announceChange) announce("Session memory updated.");
  }

  /* --------------------------------------------------------- memory panel */

  var PANEL_KEY = "nexus.memoryPanel";
  var wide = window.matchMedia("(min-width: 960px)");

  function setPanel(open, focus) {
    el.memoryPanel.hidden = !open;
    el.memoryToggle.setAttribute("aria-expanded", open ? "true" : "false");
    el.layout.classList.toggle("panel-open", open);
    if (open && focus) el.memoryClose.focus();
  }

  el.memoryToggle.addEventListener("click", function () {
    var open = el.memoryPanel.hidden;
    setPanel(open, open && !wide.matches);
    try {
      window.localStorage.setItem(PANEL_KEY, open ? "open" : "closed");
    } catch (err) {
      /* storage unavailable */
    }
  });

  el.memoryClose.addEventListener("click", function () {
    setPanel(false);
    el.memoryToggle.focus();
    try {
      window.localStorage.setItem(PANEL_KEY, "closed");
    } catch (err) {
      /* storage unavailable */
    }
  });

  el.memoryPanel.addEventListener("keydown", function (event) {
    if (event.key === "Escape" && !wide.matches) {
      setPanel(false);
      el.memoryToggle.focus();
    }
  });

  (function initialPanel() {
    var saved = null;
    try {
      saved = window.localStorage.getItem(PANEL_KEY);
    } catch (err) {
      /* storage unavailable */
    }
    setPanel(wide.matches && saved !== "closed");
  })();

  /* ------------------------------------------------------ load earlier */

  /* Loads the page of history before the first exchange shown; resolves
     to whether it did. */
  async function loadEarlier() {
    if (state.loadingEarlier || !state.hasEarlier || !state.earlierUrl) return false;
    state.loadingEarlier = true;
    el.loadEarlier.disabled = true;
    el.loadEarlier.textContent = "Loading…";
    var first = el.messages.querySelector(".episode[data-episode-id]");
    var firstId = first ? Number(first.dataset.episodeId) : null;
    try {
      var data = await getJson(state.earlierUrl);
      var rows = (Array.isArray(data) ? data : data.results || []).filter(function (ep) {
        return firstId === null || Number(ep.id) < firstId;
      });
      rows.sort(function (a, b) {
        return a.id - b.id;
      });
      var oldHeight = el.conversation.scrollHeight;
      var oldTop = el.conversation.scrollTop;
      var fragment = document.createDocumentFragment();
      rows.forEach(function (ep) {
        fragment.appendChild(buildEpisode(ep));
      });
      el.messages.insertBefore(fragment, el.messages.firstChild);
      el.conversation.scrollTop = oldTop + (el.conversation.scrollHeight - oldHeight);
      state.earlierUrl = Array.isArray(data) ? null : data.previous || null;
      state.hasEarlier = Boolean(state.earlierUrl) && rows.length > 0;
      updateEmptyState();
    } catch (err) {
      if (!(isAccessError(err.status) && (await checkAccess()))) {
        el.loadEarlier.textContent = "Could not load earlier messages. Try again";
        el.loadEarlier.disabled = false;
        state.loadingEarlier = false;
        return false;
      }
      state.hasEarlier = false;
    }
    state.loadingEarlier = false;
    el.loadEarlier.disabled = false;
    el.loadEarlier.textContent = "Load earlier messages";
    el.loadEarlier.hidden = !state.hasEarlier;
    return !state.sessionGone;
  }

  el.loadEarlier.addEventListener("click", function () {
    loadEarlier();
  });


  /* --------------------------------------------------------------- search */

  var search = { seq: 0, shown: [] };

  /* Text with the [start, end) spans wrapped in <mark>: text nodes only. */
  function highlighted(text, spans) {
    var fragment = document.createDocumentFragment();
    var at = 0;
    (spans || [])
      .slice()
      .sort(function (a, b) {
        return a[0] - b[0];
      })
      .forEach(function (span) {
        var start = Math.max(at, Number(span[0]) || 0);
        var end = Math.min(text.length, Number(span[1]) || 0);
        if (end <= start) return;
        if (start > at) fragment.appendChild(document.createTextNode(text.slice(at, start)));
        fragment.appendChild(make("mark", null, text.slice(start, end)));
        at = end;
      });
    if (at < text.length) fragment.appendChild(document.createTextNode(text.slice(at)));
    return fragment;
  }

  function closeSearch() {
    search.seq += 1;
    el.searchResults.hidden = true;
    el.searchHits.replaceChildren();
    el.searchState.textContent = "";
  }

  async function runSearch(q) {
    var seq = ++search.seq;
    el.searchResults.hidden = false;
    el.searchHits.replaceChildren();
    el.searchState.textContent = "Searching…";
    try {
      var data = await getJson(urls.search + "?q=" + encodeURIComponent(q));
      if (seq !== search.seq) return;
      renderHits(Array.isArray(data.results) ? data.results : []);
    } catch (err) {
      if (seq !== search.seq) return;
      if (isAccessError(err.status) && (await checkAccess())) {
        closeSearch();
        return;
      }
      el.searchState.textContent =
        err.status === 400 ? err.message.replace(/^q: /, "") : "Could not search: " + err.message;
    }
  }

  function renderHits(results) {
    search.shown = results;
    el.searchState.textContent = results.length
      ? plural(results.length, "exchange matches", "exchanges match") + "."
      : "No exchange matches.";
    var fragment = document.createDocumentFragment();
    results.forEach(function (result, n) {
      var item = make("li", "search-hit");
      var button = make("button", "search-hit-button");
      button.type = "button";
      button.dataset.index = n;
      button.dataset.episodeId = result.episode.id;
      var snippet = make("span", "search-snippet");
      snippet.appendChild(highlighted(String(result.snippet || ""), result.highlights));
      button.appendChild(snippet);
      var meta = make("span", "search-meta", "#" + result.episode.position + " · ");
      if (result.episode.created_at) meta.appendChild(timeElement(result.episode.created_at));
      button.appendChild(meta);
      item.appendChild(button);
      fragment.appendChild(item);
    });
    el.searchHits.replaceChildren(fragment);
  }

  function findEpisode(id) {
    return el.messages.querySelector('.episode[data-episode-id="' + Number(id) + '"]');
  }

  function sleep(ms) {
    return new Promise(function (resolve) {
      window.setTimeout(resolve, ms);
    });
  }

  /* The exchange with this id, loading earlier history until it is on the page. */
  async function episodeOnPage(id, onLoading) {
    var item = findEpisode(id);
    while (!item && state.hasEarlier && !state.sessionGone) {
      var first = el.messages.querySelector(".episode[data-episode-id]");
      if (first && Number(first.dataset.episodeId) < id) return null; // deleted since
      if (onLoading) onLoading();
      while (state.loadingEarlier) await sleep(50);
      if (!(await loadEarlier())) return null;
      item = findEpisode(id);
    }
    return item;
  }

  function clearFound() {
    Array.prototype.forEach.call(el.messages.querySelectorAll(".episode.is-found"), function (node) {
      node.classList.remove("is-found");
      Array.prototype.forEach.call(node.querySelectorAll(".msg-body"), function (body) {
        if (body.querySelector("mark")) body.textContent = body.textContent;
      });
    });
  }

  /* Marks the snippet's highlights in the message it was taken from. */
  function markExchange(item, result) {
    var snippet = String(result.snippet || "");
    if (!snippet || !result.highlights || !result.highlights.length) return;
    var lead = snippet.charAt(0) === "…" ? 1 : 0;
    var core = snippet.slice(lead, snippet.length > lead + 1 && snippet.slice(-1) === "…" ? -1 : undefined);
    var bodies = item.querySelectorAll(".msg-user .msg-body, .msg-assistant .msg-body");
    for (var i = 0; i < bodies.length; i++) {
      var text = bodies[i].textContent;
      var at = text.indexOf(core);
      if (at === -1) continue;
      var spans = result.highlights.map(function (span) {
        return [span[0] - lead + at, span[1] - lead + at];
      });
      bodies[i].replaceChildren(highlighted(text, spans));
      return;
    }
  }

  async function revealEpisode(result, stateNode) {
    var id = Number(result.episode.id);
    var item = await episodeOnPage(id, function () {
      stateNode.textContent = "Loading earlier messages…";
    });
    if (!item) {
      if (!state.sessionGone) stateNode.textContent = "Exchange #" + id + " is no longer in the conversation.";
      return false;
    }
    clearFound();
    markExchange(item, result);
    item.classList.add("is-found");
    item.scrollIntoView({ block: "center" });
    return true;
  }

  el.searchForm.addEventListener("submit", function (event) {
    event.preventDefault();
    var q = el.searchInput.value.trim();
    if (q) runSearch(q);
    else closeSearch();
  });

  el.searchInput.addEventListener("keydown", function (event) {
    if (event.key === "Escape") closeSearch();
  });

  el.searchClose.addEventListener("click", function () {
    closeSearch();
    el.searchInput.focus();
  });

  el.searchHits.addEventListener("click", async function (event) {
    var button = event.target.closest(".search-hit-button");
    if (!button) return;
    var result = search.shown[Number(button.dataset.index)];
    if (!result) return;
    var before = el.searchState.textContent;
    if (await revealEpisode(result, el.searchState)) el.searchState.textContent = before;
  });

  /* ----------------------------------------------------- context inspector */

  async function loadContext() {
    var question = el.contextQuestion.value;
    el.contextState.textContent = "Assembling the context…";
    el.contextResult.setAttribute("aria-busy", "true");
    var url = urls.context + "?question=" + encodeURIComponent(question);
    try {
      var data = await getJson(url);
      renderContext(data);
      el.contextState.textContent = "";
    } catch (err) {
      el.contextResult.hidden = true;
      var blocked = isAccessError(err.status) && (await checkAccess());
      el.contextState.textContent = blocked ? err.message : "Could not build the context: " + err.message;
    } finally {
      el.contextResult.removeAttribute("aria-busy");
    }
  }

  function countOf(value) {
    if (Array.isArray(value)) return value.length;
    if (value && typeof value === "object") return Object.keys(value).length;
    return typeof value === "number" ? value : 0;
  }

  /* "a", "a and b", "a, b and c". */
  function joinList(items) {
    if (items.length < 2) return items.join("");
    return items.slice(0, -1).join(", ") + " and " + items[items.length - 1];
  }

  /* What was left out, and why: one line per reason the payload gives, in
     words that need no knowledge of how the context is built. */
  function describeOmitted(omitted, needsNoMemory) {
    if (!omitted || typeof omitted !== "object") return [];
    var lines = [];
    // A message that needs no memory is offered no summary and no digest:
    // those are left out for that, not for lack of room.
    if (needsNoMemory) {
      lines.push([
        "memory",
        "Nothing earlier needed: the next message asks for no memory (a thanks, a greeting, a goodbye), " +
          "so only the latest exchanges go with it.",
      ]);
    }
    var budget = [];
    var retrieved = countOf(omitted.retrieved);
    var summaries = needsNoMemory ? 0 : countOf(omitted.summaries);
    var digest = needsNoMemory ? 0 : countOf(omitted.digest);
    if (retrieved) budget.push(plural(retrieved, "relevant earlier exchange", "relevant earlier exchanges"));
    if (summaries) budget.push(plural(summaries, "summary", "summaries"));
    if (digest) budget.push(plural(digest, "older exchange", "older exchanges") + " not summarised yet");
    if (budget.length) lines.push(["budget", "No room left in the token budget for " + joinList(budget) + "."]);
    var recent = countOf(omitted.recent);
    if (recent) {
      lines.push([
        "recent",
        "Only part of the budget goes to the latest exchanges: " + recent +
          " of them did not fit there, so " + (recent === 1 ? "it was" : "they were") +
          " weighed like older ones, and not quoted.",
      ]);
    }
    // Exchanges that were weighed against the message and matched too weakly to be worth their tokens.
    var floor = countOf(omitted.below_floor);
    if (floor) {
      lines.push([
        "floor",
        "Not relevant enough: " + plural(floor, "earlier exchange was", "earlier exchanges were") +
          " weighed against the next message, but " + (floor === 1 ? "matches" : "match") +
          " it too weakly to be worth quoting.",
      ]);
    }
    if (omitted.summaries_before_episode) {
      lines.push(["summaries", "The oldest summaries were not read: a context reads only the newest ones, up to a set number."]);
    }
    return lines;
  }

  function renderOmitted(omitted, needsNoMemory) {
    var lines = describeOmitted(omitted, needsNoMemory);
    var fragment = document.createDocumentFragment();
    lines.forEach(function (line) {
      var item = make("li", null, line[1]);
      item.dataset.reason = line[0];
      fragment.appendChild(item);
    });
    el.contextOmitted.replaceChildren(fragment);
    el.contextOmitted.hidden = lines.length === 0;
  }

  function renderContext(data) {
    var tokens = Number(data.token_count) || 0;
    // What the whole history would cost as this message's prompt: the
    // session's own figure (the header's) plus the question and the layout.
    var full = Number(data.full_history_tokens) || 0;
    var saved = full - tokens;
    el.contextTokens.textContent = tokens;
    // One token figure per session on the page: the header's.
    el.contextFull.textContent = el.statTokens.textContent;
    el.contextFull.title = "Sent whole with this message, the history would cost " + full + " tokens.";
    el.contextSaving.title = "";
    if (saved > 0 && full > 0) {
      el.contextSaving.textContent = saved + " tokens (" + Math.round((saved / full) * 100) + "%)";
      el.contextSaving.title = "Against sending the whole history with this message: " + full + " tokens.";
    } else {
      el.contextSaving.textContent = "none yet";
      el.contextSaving.title = "The whole history is still small enough to send as it is.";
    }
    el.contextSaving.parentNode.classList.toggle("is-zero", !(saved > 0));
    var passages = data.passages && typeof data.passages === "object" ? data.passages : {};
    var recent = Array.isArray(data.recent) ? data.recent : [];
    // The newest exchange is cut when alone it is over the recent window's share.
    var cutRecent = recent.filter(function (id) {
      return Array.isArray(passages[String(id)]);
    });
    var whole = recent.length - cutRecent.length;
    var recentText = plural(whole, "recent exchange", "recent exchanges") + " in full";
    if (cutRecent.length) recentText = (whole ? recentText + ", " : "") + "the newest in part";
    el.contextParts.textContent = [
      plural(countOf(data.summaries), "summary", "summaries"),
      plural(countOf(data.retrieved), "relevant earlier exchange", "relevant earlier exchanges"),
      recentText,
      plural(countOf(data.digest), "older exchange", "older exchanges") + " in brief (not summarised yet)",
    ].join(" · ");
    renderOmitted(data.omitted, data.needs_no_memory === true);
    el.contextPrompt.textContent = typeof data.prompt === "string" ? data.prompt : "";
    var positions = data.positions || {};
    state.contextPassages = passages;
    el.contextRetrievedCount.textContent = countOf(data.retrieved);
    el.contextRetrieved.hidden = countOf(data.retrieved) === 0;
    var retrieved = Array.isArray(data.retrieved) ? data.retrieved : [];
    renderQuoted(el.contextRetrievedList, retrieved, positions, passages, data.other_sessions || {});
    el.contextNewest.hidden = cutRecent.length === 0;
    renderQuoted(el.contextNewestList, cutRecent, positions, passages);
    el.contextResult.hidden = false;
  }

  /* Quoted exchanges, apart from summaries and recent ones: each names its
     exchange by its position, shows what of it is quoted (its passages,
     with … for the cuts, when it is quoted in part) and links to the whole
     exchange in the conversation. */
  function renderQuoted(list, ids, positions, passages, others) {
    var fragment = document.createDocumentFragment();
    ids.forEach(function (id) {
      var item = make("li", "context-retrieved-item");
      var lentFrom = others && others[String(id)];
      if (lentFrom) {
        // An exchange of another of the person's chats: named, and opened there.
        item.dataset.episodeId = id;
        item.classList.add("is-lent");
        item.appendChild(make("span", "context-retrieved-text", "#" + (positions[String(id)] || "?") + " of another chat"));
        var open = make("a", "context-lent-link", "Open in its chat");
        open.href = "/sessions/" + encodeURIComponent(lentFrom) + "/#episode-" + Number(id);
        item.appendChild(open);
        fragment.appendChild(item);
        return;
      }
      item.dataset.episodeId = id;
      var button = make("button", "context-retrieved-button", "#" + (positions[String(id)] || "?"));
      button.type = "button";
      button.dataset.episodeId = id;
      button.title = "Show this exchange in the conversation";
      item.appendChild(button);
      var spans = passages[String(id)];
      if (Array.isArray(spans)) {
        item.classList.add("is-cut");
        var quoted = "Quoted by " + plural(spans.length, "passage", "passages");
        item.appendChild(make("span", "context-retrieved-text", quoted));
      } else {
        var shown = findEpisode(id);
        var question = shown ? shown.querySelector(".msg-user .msg-body") : null;
        var text = question ? question.textContent : "An earlier exchange (not loaded on the page yet)";
        item.appendChild(make("span", "context-retrieved-text", text.length > 140 ? text.slice(0, 140) + "…" : text));
      }
      var link = make("a", "context-whole-link", "Whole exchange");
      link.href = "#episode-" + Number(id);
      link.dataset.episodeId = id;
      item.appendChild(link);
      if (Array.isArray(spans)) item.appendChild(quoteOf(id, spans));
      fragment.appendChild(item);
    });
    list.replaceChildren(fragment);
  }

  /* The passages of an exchange quoted in part, read from the exchange
     itself: the offsets count characters (code points) of user_input + response. */
  function quoteOf(id, spans) {
    var box = make("div", "context-quote", "Loading the quoted passages…");
    loadExchange(id).then(
      function (ep) {
        if (!ep) {
          box.textContent = "This exchange is no longer in the conversation.";
          return;
        }
        var user = Array.from(String(ep.user_input || ""));
        var reply = Array.from(String(ep.response || ""));
        var split = user.length;
        var mine = spans.filter(function (span) {
          return span[1] <= split;
        });
        var theirs = spans
          .filter(function (span) {
            return span[0] >= split;
          })
          .map(function (span) {
            return [span[0] - split, span[1] - split];
          });
        box.replaceChildren(quotedSide("Q", user, mine), quotedSide("A", reply, theirs));
      },
      function (err) {
        box.textContent = "Could not load the exchange: " + err.message;
      }
    );
    return box;
  }

  function quotedSide(label, chars, spans) {
    var side = make("p", "context-quote-side");
    side.appendChild(make("span", "context-quote-label", label + ": "));
    var at = 0;
    spans.forEach(function (span) {
      if (chars.slice(at, span[0]).join("").trim()) side.appendChild(cutMark());
      side.appendChild(make("span", "context-passage", chars.slice(span[0], span[1]).join("")));
      at = span[1];
    });
    if (chars.slice(at).join("").trim()) side.appendChild(cutMark());
    return side;
  }

  function cutMark() {
    var mark = make("span", "context-cut", "…");
    mark.title = "Text left out of the context";
    return mark;
  }

  /* One exchange as the API stores it: the first of the session's episodes after id - 1. */
  var exchanges = new Map();
  function loadExchange(id) {
    id = Number(id);
    if (!exchanges.has(id)) {
      var url = urls.episodes + "since/" + (id - 1) + "/?page_size=1";
      var loading = getJson(url).then(function (page) {
        var first = page && Array.isArray(page.results) ? page.results[0] : null;
        return first && Number(first.id) === id ? first : null;
      });
      loading.catch(function () {
        exchanges.delete(id); // tried again next time
      });
      exchanges.set(id, loading);
    }
    return exchanges.get(id);
  }

  /* Marks, in the whole exchange shown in the conversation, the passages the
     context quotes; only when the page shows the text the offsets count
     (the stored text, as the API gives it). */
  async function markPassages(id, spans) {
    var item = findEpisode(id);
    if (!item || !Array.isArray(spans)) return;
    var bodies = [item.querySelector(".msg-user .msg-body"), item.querySelector(".msg-assistant .msg-body")];
    var ep = await loadExchange(id).catch(function () {
      return null;
    });
    if (!ep || !bodies[0] || !bodies[1]) return;
    if (bodies[0].textContent !== ep.user_input || bodies[1].textContent !== ep.response) return;
    var split = Array.from(ep.user_input).length;
    var sides = [
      spans.filter(function (span) {
        return span[1] <= split;
      }),
      spans
        .filter(function (span) {
          return span[0] >= split;
        })
        .map(function (span) {
          return [span[0] - split, span[1] - split];
        }),
    ];
    bodies.forEach(function (body, n) {
      if (!sides[n].length) return;
      var text = body.textContent;
      var units = codeUnitOffsets(text);
      body.replaceChildren(
        highlighted(
          text,
          sides[n].map(function (span) {
            return [units[span[0]], units[span[1]]];
          })
        )
      );
    });
  }

  /* For each code point offset (as the server counts characters), its offset in UTF-16 code units. */
  function codeUnitOffsets(text) {
    var offsets = [0];
    var at = 0;
    Array.from(text).forEach(function (char) {
      at += char.length;
      offsets.push(at);
    });
    return offsets;
  }

  /* #episode-12: the whole exchange, shown in the conversation (earlier
     history is loaded until it is on the page). */
  function episodeInHash() {
    var match = /^#episode-(\d+)$/.exec(window.location.hash);
    return match ? Number(match[1]) : null;
  }

  async function revealFromHash() {
    var id = episodeInHash();
    if (id === null) return;
    var item = findEpisode(id);
    if (item && item.classList.contains("is-found")) return;
    if (await revealEpisode({ episode: { id: id } }, el.liveStatus)) {
      el.liveStatus.textContent = "Showing the exchange the address names.";
    }
  }

  window.addEventListener("hashchange", revealFromHash);

  function onQuotedClick(event) {
    var target = event.target.closest(".context-retrieved-button, .context-whole-link");
    if (!target) return;
    // A link opened in a new tab or window is left to the browser: the page there reveals it.
    if (target.tagName === "A" && (event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0)) return;
    event.preventDefault();
    var id = Number(target.dataset.episodeId);
    revealEpisode({ episode: { id: id } }, el.contextState).then(function (shown) {
      if (!shown) return;
      markPassages(id, (state.contextPassages || {})[String(id)]);
      if (target.classList.contains("context-whole-link")) {
        // The address names the exchange shown, so it can be kept or shared.
        window.history.replaceState(null, "", "#episode-" + id);
      }
      el.contextDialog.close();
    });
  }

  el.contextRetrievedList.addEventListener("click", onQuotedClick);
  el.contextNewestList.addEventListener("click", onQuotedClick);

  el.contextOpen.addEventListener("click", function () {
    el.contextQuestion.value = el.input.value.trim();
    el.contextResult.hidden = true;
    if (typeof el.contextDialog.showModal === "function") {
      el.contextDialog.showModal();
    } else {
      el.contextDialog.setAttribute("open", "");
    }
    el.contextQuestion.focus();
    loadContext();
  });

  el.contextForm.addEventListener("submit", function (event) {
    event.preventDefault();
    loadContext();
  });

  el.contextClose.addEventListener("click", function () {
    el.contextDialog.close();
  });

  el.contextDialog.addEventListener("click", function (event) {
    if (event.target === el.contextDialog) el.contextDialog.close();
  });

  el.contextDialog.addEventListener("close", function () {
    el.contextOpen.focus();
  });

  /* ------------------------------------------------------- session gone */

  /* An error from a sub-resource says the session is gone (404) or the
     person is signed out (401/403) only if the session itself answers so.
     Returns true when the page was switched to one of those states. */
  async function checkAccess() {
    try {
      await getJson(urls.session);
      return false;
    } catch (err) {
      return blockOnAccessError(err.status);
    }
  }

  /* For an error of the session itself: switches the page to "gone" (404)
     or "signed out" (401/403); returns whether it did. */
  function blockOnAccessError(status) {
    if (status === 404) {
      sessionGone();
      return true;
    }
    if (status === 401 || status === 403) {
      signedOut();
      return true;
    }
    return false;
  }

  function isAccessError(status) {
    return status === 404 || status === 401 || status === 403;
  }

  function blockPage(text, linkText, href) {
    window.clearTimeout(state.pollTimer);
    el.sessionAlert.textContent = "";
    el.sessionAlert.appendChild(document.createTextNode(text + " "));
    var link = make("a", null, linkText);
    link.href = href;
    el.sessionAlert.appendChild(link);
    el.sessionAlert.hidden = false;
    el.input.disabled = true;
    el.send.disabled = true;
    el.contextOpen.disabled = true;
    el.searchInput.disabled = true;
    el.loadEarlier.hidden = true;
    el.headerIndicator.hidden = true;
    el.buttonIndicator.hidden = true;
  }

  function signedOut() {
    if (state.sessionGone) return;
    state.sessionGone = true;
    var next = window.location.pathname;
    blockPage("You are signed out.", "Sign in again", urls.login + "?next=" + encodeURIComponent(next));
  }

  function sessionGone() {
    if (state.sessionGone) return;
    state.sessionGone = true;
    blockPage("This session no longer exists.", "Back to your sessions", urls.list);
  }

  /* ----------------------------------------------------------------- start */

  Array.prototype.forEach.call(document.querySelectorAll("time[datetime]"), function (node) {
    var text = formatTime(node.getAttribute("datetime"));
    if (text) node.textContent = text;
  });

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !state.sessionGone) schedulePoll(0);
  });

  autoGrow();
  updateEmptyState();
  scrollToBottom();
  if (config.status) applyStatus(config.status);
  schedulePoll(ACTIVE_STATES[state.summaryState] ? FAST_POLL_MS : 0);
  revealFromHash();
  // On a phone, focusing at load would pop the keyboard over the history.
  if (wide.matches) el.input.focus();
})();
