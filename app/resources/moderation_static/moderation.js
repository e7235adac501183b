// The moderator's page: a desk over the moderation API (docs/api.md, section 12).
//
// Rules this file keeps, on which the page's safety rests:
// - every text that comes from the API (comments, authors, titles, notes, explanations,
//   ids) reaches the document through `textContent` or a text node, never as markup: no
//   innerHTML, outerHTML, insertAdjacentHTML or document.write anywhere;
// - the only link made from data is the article's, built as this service's own path with
//   the language (one of nine codes) and the encoded id, so no scheme can be smuggled in;
// - the token lives in `state.token` and, only when the moderator asks, in this tab's
//   sessionStorage; it travels in the Authorization header alone (never in a URL), and
//   requests omit cookies.
"use strict";

(() => {
  const LANGUAGES = ["ko", "en", "zh_cn", "zh_tw", "ja", "fr", "de", "es", "it"];
  const LANGUAGE_NAMES = {
    ko: "한국어 (ko)", en: "English (en)", zh_cn: "简体中文 (zh_cn)", zh_tw: "繁體中文 (zh_tw)",
    ja: "日本語 (ja)", fr: "Français (fr)", de: "Deutsch (de)", es: "Español (es)",
    it: "Italiano (it)",
  };
  const QUEUES = [
    ["pending", "Pending"],
    ["withheld", "Withheld"],
    ["reported", "Reported"],
    ["notices", "Notices"],
    ["rejected", "Rejected"],
  ];
  const REJECT_REASONS = [
    ["spam", "Spam"],
    ["abuse", "Abuse"],
    ["off_topic", "Off topic"],
    ["personal_data", "Personal data"],
    ["illegal_content", "Illegal content"],
    ["banned_term", "Banned term"],
    ["other", "Other"],
  ];
  const STORAGE_KEY = "news-moderation-token";
  const PAGE_SIZE = 20;
  const LOG_POLL_MS = 3000;
  const LOG_KEEP = 200;
  const LOG_PAGE = 500;

  const $ = (id) => document.getElementById(id);

  const state = {
    token: null,
    languages: [],
    language: null,
    queue: "pending",
    order: "oldest",
    page: 1,
    totalPages: 0,
    items: [],
    current: -1,
    counts: {},
    busy: false,
    log: { cursor: null, entries: [], timer: null, generation: 0, filled: false },
  };

  // -- DOM, text only --------------------------------------------------------------------

  // el("p", {class: "x"}, "text", node, ...): attributes by setAttribute, children as text
  // nodes or elements. Never markup.
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name.startsWith("on") || name === "style" || name === "srcdoc") {
        throw new Error("el(): refusing attribute " + name);
      }
      node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) append(node, child);
    return node;
  }

  function append(node, child) {
    if (child === null || child === undefined || child === false) return;
    if (Array.isArray(child)) {
      for (const c of child) append(node, c);
    } else if (child instanceof Node) {
      node.appendChild(child);
    } else {
      node.appendChild(document.createTextNode(String(child)));
    }
  }

  function setText(node, text) {
    node.textContent = text === null || text === undefined ? "" : String(text);
  }

  function announce(text) {
    setText($("status"), text);
  }

  function showError(text) {
    const box = $("error");
    if (!text) {
      box.hidden = true;
      setText(box, "");
      return;
    }
    setText(box, text);
    box.hidden = false;
  }

  function label(pairs, code) {
    for (const [value, text] of pairs) if (value === code) return text;
    return code;
  }

  // -- the API ---------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, detail) {
      super(detail);
      this.status = status;
    }
  }

  function describe(status, data) {
    if (data && typeof data.detail === "string") return `${status}: ${data.detail}`;
    if (data && Array.isArray(data.detail)) {
      const parts = data.detail.map((d) => {
        const where = Array.isArray(d.loc) ? d.loc.join(".") : "";
        return where ? `${where}: ${d.msg}` : String(d.msg);
      });
      return `${status}: ${parts.join("; ")}`;
    }
    return `${status}: the service answered an error without a detail`;
  }

  async function api(method, path, body) {
    const headers = { Accept: "application/json" };
    if (state.token) headers.Authorization = "Bearer " + state.token;
    const init = {
      method,
      headers,
      credentials: "omit",
      cache: "no-store",
      referrerPolicy: "no-referrer",
      redirect: "error",
    };
    if (body !== undefined) {
      headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let resp;
    try {
      resp = await fetch(path, init);
    } catch (err) {
      throw new ApiError(0, "The service did not answer (" + err.message + ")");
    }
    const text = await resp.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (_) {
        data = null;
      }
    }
    if (!resp.ok) throw new ApiError(resp.status, describe(resp.status, data));
    return data;
  }

  const enc = encodeURIComponent;
  const langBase = (language) => `/api/v1/${language}`;
  const commentBase = (language, articleId, commentId) =>
    `${langBase(language)}/articles/${enc(articleId)}/comments/${enc(commentId)}`;
  const queuePath = (language, queue, page, pageSize, order) =>
    `${langBase(language)}/moderation/queue?queue=${queue}&page=${page}` +
    `&page_size=${pageSize}&order=${order}`;
  const settingsPath = (language, articleId) =>
    `${langBase(language)}/articles/${enc(articleId)}/comments/settings`;
  const articlePath = (language, articleId) => `${langBase(language)}/articles/${enc(articleId)}`;

  // A 401 while signed in means the token stopped working: back to the sign-in form.
  function handle(err, where) {
    if (err instanceof ApiError && err.status === 401 && state.token) {
      signOut();
      showError("The token was refused (" + err.message + "). Sign in again.");
      return;
    }
    showError((where ? where + ": " : "") + err.message);
  }

  // -- sign-in and scope -----------------------------------------------------------------

  // No "who am I" in the API: the scope is the languages whose queue does not answer 403.
  async function discoverScope() {
    const answers = await Promise.all(
      LANGUAGES.map((language) =>
        api("GET", queuePath(language, "pending", 1, 1, "oldest")).then(
          (data) => ({ language, data }),
          (error) => ({ language, error }),
        ),
      ),
    );
    const refused = answers.find((a) => a.error && a.error.status === 401);
    if (refused) throw refused.error;
    const other = answers.find((a) => a.error && a.error.status !== 403);
    if (other) throw other.error;
    return answers.filter((a) => !a.error).map((a) => a.language);
  }

  async function signIn(token, remember) {
    showError("");
    state.token = token;
    announce("Signing in…");
    let scope;
    try {
      scope = await discoverScope();
    } catch (err) {
      state.token = null;
      sessionStorage.removeItem(STORAGE_KEY);
      announce("");
      if (err instanceof ApiError && err.status === 401) {
        showError("Sign-in failed: this token is not a moderator's (" + err.message + ").");
      } else {
        showError("Sign-in failed: " + err.message);
      }
      return;
    }
    if (!scope.length) {
      state.token = null;
      sessionStorage.removeItem(STORAGE_KEY);
      announce("");
      showError("Sign-in failed: this token moderates no language.");
      return;
    }
    if (remember) sessionStorage.setItem(STORAGE_KEY, token);
    else sessionStorage.removeItem(STORAGE_KEY);
    state.languages = scope;
    $("token").value = "";
    $("sign-in").hidden = true;
    $("desk").hidden = false;
    $("sign-out").hidden = false;
    const who = $("who");
    setText(who, "Moderating: " + scope.join(", "));
    who.hidden = false;
    const select = $("language");
    select.replaceChildren(
      ...scope.map((language) => el("option", { value: language }, LANGUAGE_NAMES[language])),
    );
    select.value = scope[0];
    announce("Signed in. Languages: " + scope.join(", ") + ".");
    await selectLanguage(scope[0]);
    $("queue-items").focus();
  }

  function signOut() {
    state.token = null;
    state.languages = [];
    state.language = null;
    state.items = [];
    state.current = -1;
    state.counts = {};
    sessionStorage.removeItem(STORAGE_KEY);
    stopLog();
    $("queue-items").replaceChildren();
    $("log-items").replaceChildren();
    $("figures-out").replaceChildren();
    $("queue-tabs").replaceChildren();
    $("language").replaceChildren();
    $("settings-form").hidden = true;
    $("desk").hidden = true;
    $("sign-out").hidden = true;
    $("who").hidden = true;
    setText($("who"), "");
    $("sign-in").hidden = false;
    showError("");
    announce("Signed out.");
    $("token").focus();
  }

  // -- queues ----------------------------------------------------------------------------

  async function selectLanguage(language) {
    showError("");
    state.language = language;
    state.page = 1;
    state.current = -1;
    $("settings-form").hidden = true;
    $("figures-out").replaceChildren();
    await Promise.all([loadCounts(), loadQueue()]);
    startLog();
  }

  function renderTabs() {
    const tabs = $("queue-tabs");
    tabs.replaceChildren(
      ...QUEUES.map(([queue, name]) => {
        const count = state.counts[queue];
        const button = el(
          "button",
          {
            type: "button",
            "data-queue": queue,
            "aria-pressed": queue === state.queue ? "true" : "false",
          },
          name,
          " ",
          el("span", { class: "count" }, count === undefined ? "…" : String(count)),
        );
        button.addEventListener("click", () => {
          state.queue = queue;
          state.page = 1;
          state.current = -1;
          renderTabs();
          loadQueue().then(() => $("queue-items").focus());
        });
        return button;
      }),
    );
  }

  async function loadCounts() {
    const language = state.language;
    const totals = await Promise.all(
      QUEUES.map(([queue]) =>
        api("GET", queuePath(language, queue, 1, 1, "oldest")).then(
          (data) => data.total,
          (err) => {
            handle(err, "Counting the " + queue + " queue");
            return undefined;
          },
        ),
      ),
    );
    if (language !== state.language) return;
    QUEUES.forEach(([queue], i) => {
      state.counts[queue] = totals[i];
    });
    renderTabs();
  }

  async function loadQueue(keepIndex) {
    const language = state.language;
    const queue = state.queue;
    let data;
    try {
      data = await api("GET", queuePath(language, queue, state.page, PAGE_SIZE, state.order));
    } catch (err) {
      handle(err, "Loading the " + queue + " queue");
      return;
    }
    if (language !== state.language || queue !== state.queue || !state.token) return;
    if (!data.items.length && state.page > 1 && data.total > 0) {
      state.page = Math.max(1, data.total_pages);
      return loadQueue(keepIndex);
    }
    state.items = data.items;
    state.totalPages = data.total_pages;
    state.counts[queue] = data.total;
    renderTabs();
    renderQueue(data);
    if (state.items.length) {
      const index = keepIndex === undefined ? 0 : Math.min(keepIndex, state.items.length - 1);
      setCurrent(index, false);
    } else {
      state.current = -1;
    }
  }

  function renderQueue(data) {
    const name = label(QUEUES, state.queue);
    setText(
      $("queue-summary"),
      `${name} in ${LANGUAGE_NAMES[state.language]}: ${data.total} comment` +
        (data.total === 1 ? "" : "s") +
        (state.order === "oldest" ? ", oldest first" : ", newest first"),
    );
    const list = $("queue-items");
    if (!data.items.length) {
      list.replaceChildren(el("li", { class: "empty" }, "Nothing in this queue."));
    } else {
      list.replaceChildren(...data.items.map((item, i) => renderItem(item, i)));
    }
    setText(
      $("page-info"),
      data.total_pages ? `Page ${data.page} of ${data.total_pages}` : "No pages",
    );
    $("prev-page").disabled = state.page <= 1;
    $("next-page").disabled = state.page >= data.total_pages;
  }

  function describeModeration(m) {
    if (!m) return null;
    const parts = [label(REJECT_REASONS, m.reason) || "no reason given"];
    if (m.automated) parts.push("automated rule");
    else if (m.moderator) parts.push("by moderator " + m.moderator);
    else parts.push("by a moderator");
    if (m.at) parts.push(m.at);
    return parts.join(" · ");
  }

  function renderItem(item, index) {
    const titleId = "item-title-" + index;
    const card = el("li", {
      class: "item",
      tabindex: "-1",
      "data-id": item.id,
      "data-index": index,
      "aria-labelledby": titleId,
    });
    const article = el(
      "a",
      { href: articlePath(item.language, item.article_id), class: "article", dir: "auto" },
      item.article_title || item.article_id,
    );
    card.appendChild(
      el(
        "div",
        { class: "meta" },
        el(
          "h3",
          { id: titleId, class: "who" },
          el("bdi", { class: "author" }, item.author),
          el("span", { class: "sep" }, " on "),
          article,
        ),
        el(
          "p",
          { class: "facts" },
          el("span", { class: "badge status-" + item.status }, item.status),
          item.featured ? el("span", { class: "badge featured" }, "featured") : null,
          item.edited_at ? el("span", { class: "badge" }, "edited") : null,
          " ",
          el("time", { datetime: item.created_at }, item.created_at),
          " · comment ",
          el("bdi", { class: "id" }, item.id),
          item.parent_id ? [" · reply to ", el("bdi", { class: "id" }, item.parent_id)] : null,
        ),
      ),
    );
    card.appendChild(el("p", { class: "text", dir: "auto" }, item.content));

    const why = describeModeration(item.moderation);
    if (why) {
      card.appendChild(
        el(
          "p",
          { class: "why" },
          el("span", { class: "label" }, "Why here: "),
          why,
          item.moderation.note
            ? [el("br"), el("span", { class: "label" }, "Note: "), el("bdi", {}, item.moderation.note)]
            : null,
        ),
      );
    }

    labelledList(
      card,
      "reports",
      "Reports since the last decision:",
      Object.entries(item.reports || {}).map(([reason, n]) => el("li", {}, `${reason}: ${n}`)),
    );
    labelledList(
      card,
      "notices",
      "Notices of illegal content:",
      (item.notices || []).map((notice) => renderNotice(item, notice, card)),
    );

    const actions = el("div", { class: "actions" });
    const approve = el("button", { type: "button", class: "approve" }, "Approve");
    approve.addEventListener("click", () => decide(item, { action: "approve" }, card));
    const reject = el("button", { type: "button", class: "reject" }, "Reject…");
    reject.addEventListener("click", () => openRejectForm(item, card));
    actions.append(approve, reject);
    if (item.status === "visible") {
      const feature = el(
        "button",
        { type: "button", class: "feature" },
        item.featured ? "Unfeature" : "Feature",
      );
      feature.addEventListener("click", () =>
        decide(item, { action: item.featured ? "unfeature" : "feature" }, card),
      );
      actions.append(feature);
    }
    const settings = el("button", { type: "button", class: "open-settings" }, "Article settings");
    settings.addEventListener("click", () => {
      $("settings-article").value = item.article_id;
      loadSettings(item.article_id).then(() => $("settings-mode").focus());
    });
    actions.append(settings);
    card.appendChild(actions);
    card.appendChild(el("div", { class: "slot" }));
    card.appendChild(el("p", { class: "card-error error", role: "alert", hidden: true }));
    card.addEventListener("focusin", () => {
      if (state.current !== index) setCurrent(index, false);
    });
    return card;
  }

  // A labelled list at the end of the card, of these `items`; none when there are none.
  function labelledList(card, cls, caption, items) {
    if (!items.length) return;
    card.appendChild(
      el("div", { class: cls }, el("span", { class: "label" }, caption), el("ul", {}, items)),
    );
  }

  function renderNotice(item, notice, card) {
    const contact = [];
    if (notice.notifier_name) contact.push(notice.notifier_name);
    if (notice.notifier_email) contact.push(notice.notifier_email);
    const entry = el(
      "li",
      { class: "notice" },
      el(
        "p",
        { class: "facts" },
        "Notice ",
        el("bdi", { class: "id" }, notice.id),
        " · ",
        notice.status === "decided" ? "decided · " : "",
        "received ",
        el("time", { datetime: notice.received_at }, notice.received_at),
      ),
      notice.law ? el("p", {}, el("span", { class: "label" }, "Law: "), el("bdi", {}, notice.law)) : null,
      el("p", { class: "text", dir: "auto" }, notice.explanation),
      contact.length
        ? el("p", {}, el("span", { class: "label" }, "Notifier: "), el("bdi", {}, contact.join(", ")))
        : null,
    );
    if (notice.status !== "decided") {
      const button = el("button", { type: "button", class: "decide-notice" }, "Decide notice…");
      button.addEventListener("click", () => openNoticeForm(item, notice, card));
      entry.appendChild(button);
    }
    return entry;
  }

  function setCurrent(index, focus) {
    const list = $("queue-items");
    const old = list.querySelector(".item.current");
    if (old) {
      old.classList.remove("current");
      old.removeAttribute("aria-current");
    }
    state.current = index;
    const card = list.querySelector(`.item[data-index="${index}"]`);
    if (!card) return;
    card.classList.add("current");
    card.setAttribute("aria-current", "true");
    if (focus) {
      card.focus();
      card.scrollIntoView({ block: "nearest" });
    }
  }

  function currentCard() {
    return $("queue-items").querySelector(`.item[data-index="${state.current}"]`);
  }

  let turning = false; // a page is loading for j or k: more presses wait for it

  async function move(step) {
    if (!state.items.length || turning) return;
    const next = state.current + step;
    if (next >= 0 && next < state.items.length) {
      setCurrent(next, true);
      return;
    }
    turning = true;
    try {
      if (step > 0 && state.page < state.totalPages) {
        state.page += 1;
        await loadQueue(0);
        setCurrent(0, true);
      } else if (step < 0 && state.page > 1) {
        state.page -= 1;
        await loadQueue(PAGE_SIZE - 1);
        setCurrent(state.items.length - 1, true);
      }
    } finally {
      turning = false;
    }
  }

  // -- decisions -------------------------------------------------------------------------

  function cardError(card, text) {
    const box = card.querySelector(".card-error");
    if (!box) return;
    setText(box, text || "");
    box.hidden = !text;
  }

  async function decide(item, decision, card) {
    if (state.busy) return;
    state.busy = true;
    showError("");
    cardError(card, "");
    const body = {
      action: decision.action,
      reason: decision.reason || null,
      note: decision.note || null,
      explanation: decision.explanation || null,
      notice_id: decision.notice_id || null,
      notice_outcome: decision.notice_outcome || null,
      grounds: decision.grounds || null,
    };
    const index = state.current;
    try {
      await api(
        "POST",
        commentBase(item.language, item.article_id, item.id) + "/decision",
        body,
      );
    } catch (err) {
      state.busy = false;
      if (err instanceof ApiError && err.status === 401) {
        handle(err);
        return;
      }
      cardError(card, "Not done: " + err.message);
      showError("The decision on comment " + item.id + " failed: " + err.message);
      return;
    }
    state.busy = false;
    const done = {
      approve: "Approved",
      reject: "Rejected",
      feature: "Featured",
      unfeature: "Unfeatured",
    }[decision.action];
    let said = `${done} comment ${item.id}`;
    if (decision.reason) said += ` (${label(REJECT_REASONS, decision.reason)})`;
    if (decision.notice_id) {
      said += `; notice ${decision.notice_id} decided ` +
        (decision.notice_outcome === "illegal" ? "illegal" : "not illegal");
    }
    announce(said + ".");
    await loadQueue(index);
    // The next comment takes focus, unless the moderator is already typing somewhere.
    if (!typing(document.activeElement)) {
      const now = currentCard();
      if (now) now.focus();
      else $("queue-items").focus();
    }
    loadCounts();
    pullLog();
  }

  function closeForms() {
    for (const slot of document.querySelectorAll("#queue-items .slot")) slot.replaceChildren();
  }

  function field(id, text, control) {
    return el("div", { class: "field" }, el("label", { for: id }, text), control);
  }

  function reasonSelect(id, exclude) {
    return el(
      "select",
      { id, required: true },
      el("option", { value: "" }, "Choose a reason"),
      REJECT_REASONS.filter(([code]) => code !== exclude).map(([code, text]) =>
        el("option", { value: code }, text),
      ),
    );
  }

  // A labelled textarea of at most `maxlength` characters, `rows` high.
  function textField(id, text, maxlength, rows, required) {
    const attrs = { id, maxlength: String(maxlength), rows: String(rows) };
    if (required) attrs.required = true;
    return field(id, text, el("textarea", attrs));
  }

  // Shows a decision form in the card: its Submit and Cancel buttons (Cancel closes it and
  // gives the focus back to the card), `onSubmit` on submit, and the focus on the field
  // `firstId`.
  function showForm(form, card, submit, onSubmit, firstId) {
    const cancel = el("button", { type: "button" }, "Cancel");
    cancel.addEventListener("click", () => {
      closeForms();
      card.focus();
    });
    form.appendChild(el("div", { class: "actions" }, submit, cancel));
    form.addEventListener("submit", (ev) => {
      ev.preventDefault();
      onSubmit();
    });
    card.querySelector(".slot").appendChild(form);
    $(firstId).focus();
  }

  function openRejectForm(item, card) {
    closeForms();
    const n = card.getAttribute("data-index");
    const form = el(
      "form",
      // novalidate: the checks below say what is missing as text, in the card.
      { class: "decide", "aria-label": "Reject comment " + item.id, novalidate: true },
      el("h4", {}, "Reject this comment"),
      field("reject-reason-" + n, "Reason", reasonSelect("reject-reason-" + n)),
      textField("reject-note-" + n, "Note for moderators (optional)", 1000, 2),
      textField(
        "reject-explanation-" + n,
        "Explanation for the author, the statement of reasons (optional)",
        2000,
        3,
      ),
    );
    const submit = el("button", { type: "submit", class: "reject" }, "Reject");
    showForm(form, card, submit, () => {
      const reason = $("reject-reason-" + n).value;
      if (!reason) {
        cardError(card, "Choose a reason to reject.");
        $("reject-reason-" + n).focus();
        return;
      }
      decide(
        item,
        {
          action: "reject",
          reason,
          note: $("reject-note-" + n).value.trim(),
          explanation: $("reject-explanation-" + n).value.trim(),
        },
        card,
      );
    }, "reject-reason-" + n);
  }

  function openNoticeForm(item, notice, card) {
    closeForms();
    const n = card.getAttribute("data-index");
    const id = (name) => `notice-${name}-${n}`;
    const outcome = el(
      "fieldset",
      { class: "outcome" },
      el("legend", {}, "Outcome"),
      el(
        "label",
        { class: "check" },
        el("input", { type: "radio", name: id("outcome"), value: "illegal", id: id("illegal") }),
        " Illegal: the comment is removed (rejected, illegal content)",
      ),
      el(
        "label",
        { class: "check" },
        el("input", {
          type: "radio",
          name: id("outcome"),
          value: "not_illegal",
          id: id("not-illegal"),
        }),
        " Not illegal",
      ),
    );
    const then = el(
      "div",
      { class: "field", hidden: true },
      el("label", { for: id("then") }, "Then the comment is"),
      el(
        "select",
        { id: id("then") },
        el("option", { value: "approve" }, "approved (shown to readers)"),
        el("option", { value: "reject" }, "rejected for another reason"),
      ),
    );
    const otherReason = field(id("reason"), "Other reason", reasonSelect(id("reason"), "illegal_content"));
    otherReason.hidden = true;
    const form = el(
      "form",
      // novalidate: a hidden required field must not block the form silently.
      { class: "decide", "aria-label": "Decide notice " + notice.id, novalidate: true },
      el("h4", {}, "Decide notice ", el("bdi", {}, notice.id)),
      outcome,
      then,
      otherReason,
      textField(id("grounds"), "Grounds (required, sent to the notifier)", 1000, 2, true),
      textField(
        id("explanation"),
        "Explanation for the author and the notifier (optional)",
        2000,
        2,
      ),
      textField(id("note"), "Note for moderators (optional)", 1000, 2),
    );
    const sync = () => {
      const chosen = form.querySelector(`input[name="${id("outcome")}"]:checked`);
      const notIllegal = chosen && chosen.value === "not_illegal";
      then.hidden = !notIllegal;
      otherReason.hidden = !(notIllegal && $(id("then")).value === "reject");
    };
    outcome.addEventListener("change", sync);
    then.addEventListener("change", sync);
    const submit = el("button", { type: "submit" }, "Decide notice");
    showForm(form, card, submit, () => {
      const chosen = form.querySelector(`input[name="${id("outcome")}"]:checked`);
      const grounds = $(id("grounds")).value.trim();
      if (!chosen) {
        cardError(card, "Choose an outcome: illegal or not illegal.");
        $(id("illegal")).focus();
        return;
      }
      if (!grounds) {
        cardError(card, "Give the grounds of the decision.");
        $(id("grounds")).focus();
        return;
      }
      const decision = {
        notice_id: notice.id,
        notice_outcome: chosen.value,
        grounds,
        note: $(id("note")).value.trim(),
        explanation: $(id("explanation")).value.trim(),
      };
      if (chosen.value === "illegal") {
        decision.action = "reject";
        decision.reason = "illegal_content";
      } else if ($(id("then")).value === "reject") {
        decision.action = "reject";
        decision.reason = $(id("reason")).value;
        if (!decision.reason) {
          cardError(card, "Choose the other reason to reject.");
          $(id("reason")).focus();
          return;
        }
      } else {
        decision.action = "approve";
      }
      decide(item, decision, card);
    }, id("illegal"));
  }

  // -- keyboard --------------------------------------------------------------------------

  function typing(target) {
    if (!(target instanceof Element)) return false;
    return Boolean(target.closest("input, textarea, select, [contenteditable]")) ||
      target.isContentEditable;
  }

  function onKey(ev) {
    if (ev.defaultPrevented || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    if ($("desk").hidden) return;
    if (ev.key === "Escape") {
      const open = document.querySelector("#queue-items .slot form");
      if (open) {
        closeForms();
        const card = currentCard();
        if (card) card.focus();
        ev.preventDefault();
      }
      return;
    }
    if (typing(ev.target)) return;
    const item = state.items[state.current];
    switch (ev.key) {
      case "j":
        ev.preventDefault();
        move(1);
        break;
      case "k":
        ev.preventDefault();
        move(-1);
        break;
      case "a":
        if (item) {
          ev.preventDefault();
          decide(item, { action: "approve" }, currentCard());
        }
        break;
      case "r":
        if (item) {
          ev.preventDefault();
          openRejectForm(item, currentCard());
        }
        break;
      default:
    }
  }

  // -- article settings ------------------------------------------------------------------

  let settingsArticle = null;

  async function loadSettings(articleId) {
    showError("");
    let data;
    try {
      data = await api("GET", settingsPath(state.language, articleId));
    } catch (err) {
      handle(err, "Loading the settings of article " + articleId);
      $("settings-form").hidden = true;
      return;
    }
    renderSettings(data);
  }

  function renderSettings(data) {
    settingsArticle = data.article_id;
    setText(
      $("settings-about"),
      `Article ${data.article_id} (${data.language}): mode ` +
        (data.mode || "service default") + ", " + (data.closed ? "closed" : "open") + ".",
    );
    $("settings-mode").value = data.mode || "";
    $("settings-closed").checked = Boolean(data.closed);
    setText(
      $("settings-closes"),
      data.closes_at ? "Closes by age at " + data.closes_at + "." : "No closing by age.",
    );
    $("settings-form").hidden = false;
  }

  async function saveSettings() {
    if (!settingsArticle) return;
    showError("");
    const body = {
      mode: $("settings-mode").value || null,
      closed: $("settings-closed").checked,
    };
    let data;
    try {
      data = await api("PUT", settingsPath(state.language, settingsArticle), body);
    } catch (err) {
      handle(err, "Saving the settings of article " + settingsArticle);
      return;
    }
    renderSettings(data);
    announce(
      `Saved: article ${data.article_id} now ${data.mode || "service default"}, ` +
        (data.closed ? "closed." : "open."),
    );
    pullLog();
  }

  // -- the log, followed by its cursor ---------------------------------------------------

  function stopLog() {
    state.log.generation += 1;
    if (state.log.timer) clearTimeout(state.log.timer);
    state.log.timer = null;
  }

  function startLog() {
    stopLog();
    state.log.cursor = null;
    state.log.entries = [];
    state.log.filled = false;
    $("log-items").replaceChildren();
    pullLog();
  }

  let pulling = false;

  async function pullLog() {
    if (!state.token || !state.language || pulling) return;
    pulling = true;
    const generation = state.log.generation;
    const language = state.language;
    let fresh = 0;
    try {
      for (let round = 0; round < 20; round += 1) {
        const after = state.log.cursor === null ? "" : `after=${enc(state.log.cursor)}&`;
        const data = await api("GET", `${langBase(language)}/moderation/log?${after}limit=${LOG_PAGE}`);
        if (generation !== state.log.generation) return;
        state.log.entries.push(...data.items);
        fresh += data.items.length;
        if (data.next !== null && data.next !== undefined) state.log.cursor = data.next;
        if (data.items.length < LOG_PAGE) break;
      }
      if (state.log.entries.length > LOG_KEEP) {
        state.log.entries = state.log.entries.slice(-LOG_KEEP);
      }
      if (fresh) renderLog();
      setText(
        $("log-state"),
        "Followed up to entry " + (state.log.cursor === null ? "(none yet)" : state.log.cursor) +
          ($("log-follow").checked ? ", checking every few seconds." : ", paused."),
      );
      // New entries after the first fill: the counts may have moved.
      if (fresh && state.log.filled) loadCounts();
      state.log.filled = true;
    } catch (err) {
      if (generation === state.log.generation) handle(err, "Following the log");
    } finally {
      pulling = false;
      if (generation === state.log.generation) scheduleLog();
      // The language changed while this pull ran: the new log's first pull was turned
      // away by this one, so it starts now.
      else pullLog();
    }
  }

  function scheduleLog() {
    if (state.log.timer) clearTimeout(state.log.timer);
    state.log.timer = null;
    if (!state.token || !$("log-follow").checked) return;
    state.log.timer = setTimeout(() => {
      state.log.timer = null;
      if (document.hidden) scheduleLog();
      else pullLog();
    }, LOG_POLL_MS);
  }

  function renderLog() {
    const rows = state.log.entries.slice().reverse().map((e) => {
      const moved = e.from === e.to || e.from === null ? (e.to || "") : `${e.from} → ${e.to}`;
      return el(
        "li",
        { "data-log-id": e.id },
        el("time", { datetime: e.at }, e.at),
        " ",
        el("strong", {}, e.action),
        " comment ",
        el("bdi", { class: "id" }, e.comment_id),
        " on ",
        el("bdi", { class: "id" }, e.article_id),
        moved ? ": " + moved : "",
        e.reason ? " · " + e.reason : "",
        " · ",
        e.automated ? "automated" : el("bdi", {}, e.moderator || "moderator"),
        e.notice_id ? [" · notice ", el("bdi", { class: "id" }, e.notice_id)] : null,
        e.note ? [" · note: ", el("bdi", {}, e.note)] : null,
      );
    });
    $("log-items").replaceChildren(...rows);
  }

  // -- transparency figures --------------------------------------------------------------

  function table(caption, rows) {
    return el(
      "table",
      {},
      el("caption", {}, caption),
      el(
        "tbody",
        {},
        rows.length
          ? rows.map(([name, value]) =>
              el("tr", {}, el("th", { scope: "row" }, name), el("td", {}, String(value))),
            )
          : el("tr", {}, el("td", { colspan: "2" }, "none")),
      ),
    );
  }

  async function loadFigures() {
    showError("");
    const from = $("figures-from").value;
    const to = $("figures-to").value;
    let data;
    try {
      data = await api(
        "GET",
        `/api/v1/moderation/transparency?from=${enc(from)}&to=${enc(to)}`,
      );
    } catch (err) {
      handle(err, "Loading the transparency figures");
      return;
    }
    const n = data.notices || {};
    const median = n.median_hours_to_decision;
    $("figures-out").replaceChildren(
      el("p", { class: "summary" }, `From ${data.from} to ${data.to}, over your languages.`),
      table("Notices of illegal content", [
        ["Received", n.received],
        ["Decided illegal", n.decided_illegal],
        ["Decided not illegal", n.decided_not_illegal],
        ["Undecided", n.undecided],
        ["Median hours to a decision", median === null || median === undefined ? "none decided" : median],
      ]),
      table("Removals by reason", Object.entries(data.removals || {})),
      table("Removals by whom", [
        ["Automated", data.automated_removals],
        ["By a moderator", data.human_removals],
      ]),
      table("Reader reports by reason", Object.entries(data.reports || {})),
    );
    announce(`Figures from ${data.from} to ${data.to} shown.`);
  }

  // -- wiring ----------------------------------------------------------------------------

  function isoDay(date) {
    return date.toISOString().slice(0, 10);
  }

  function init() {
    $("sign-in-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const token = $("token").value.trim();
      if (!token) {
        showError("Enter your moderator token.");
        return;
      }
      signIn(token, $("remember").checked);
    });
    $("sign-out").addEventListener("click", signOut);
    $("language").addEventListener("change", (ev) => selectLanguage(ev.target.value));
    $("order").addEventListener("change", (ev) => {
      state.order = ev.target.value;
      state.page = 1;
      loadQueue();
    });
    $("refresh").addEventListener("click", () => {
      loadCounts();
      loadQueue(state.current < 0 ? 0 : state.current);
    });
    $("prev-page").addEventListener("click", () => {
      if (state.page > 1) {
        state.page -= 1;
        loadQueue();
      }
    });
    $("next-page").addEventListener("click", () => {
      if (state.page < state.totalPages) {
        state.page += 1;
        loadQueue();
      }
    });
    $("settings-load").addEventListener("submit", (ev) => {
      ev.preventDefault();
      const id = $("settings-article").value.trim();
      if (id) loadSettings(id);
    });
    $("settings-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      saveSettings();
    });
    $("log-follow").addEventListener("change", (ev) => {
      if (ev.target.checked) pullLog();
      else stopLogTimer();
    });
    $("figures-form").addEventListener("submit", (ev) => {
      ev.preventDefault();
      loadFigures();
    });
    const today = new Date();
    $("figures-to").value = isoDay(today);
    $("figures-from").value = isoDay(new Date(today.getTime() - 30 * 86400 * 1000));
    document.addEventListener("keydown", onKey);

    const kept = sessionStorage.getItem(STORAGE_KEY);
    if (kept) {
      $("remember").checked = true;
      signIn(kept, true);
    } else {
      $("token").focus();
    }
  }

  function stopLogTimer() {
    if (state.log.timer) clearTimeout(state.log.timer);
    state.log.timer = null;
    setText($("log-state"), "Paused at entry " + (state.log.cursor === null ? "(none yet)" : state.log.cursor) + ".");
  }

  init();
})();
