/* The judging page. A label's key press is ONE request: it POSTs (fetch, the session's CSRF token) to the
 * rater API's `judgement-and-next` (judgements/rater_api.py), which records the label and answers with the
 * next item as JSON; the page builds the topic and the document from it (text as text, the body as the
 * server sanitised it) and swaps them in, then refreshes the progress bars in the background. Skip,
 * revise and the first item POST to the page's own endpoints, which answer with the parts rendered.
 *
 * No inline script or handler may run under the page's Content-Security-Policy, so the rubric's keys
 * and the endpoints come from the JSON block #judge-config. The parts the server sends are rendered by
 * Django templates (escaped) and the document body is sanitised by nh3 before it gets here.
 *
 * Keys: a grade's key saves that grade; the unrateable key (x) saves "can't judge"; s skips; u shows
 * the previous judgement to change (u again goes further back, Esc returns); n focuses the note (Esc
 * leaves it); facet keys toggle a facet's choice. A held key does not repeat, and grade keys are ignored
 * for GUARD_MS after a new document appears so that a double tap cannot judge a document unseen.
 */
(function () {
  "use strict";

  var GUARD_MS = 200;
  var configEl = document.getElementById("judge-config");
  var root = document.getElementById("judge");
  var form = document.getElementById("judge-form");
  if (!configEl || !root || !form) return;

  var config = JSON.parse(configEl.textContent);
  var urls = config.urls;
  var gradesByLowerKey = {};  // so that Caps Lock or Shift does not hide a letter key
  Object.keys(config.grades).forEach(function (k) { gradesByLowerKey[k.toLowerCase()] = config.grades[k]; });
  var slots = {
    topic: document.getElementById("slot-topic"),
    document: document.getElementById("slot-document"),
    progress: document.getElementById("slot-progress"),
  };
  var note = document.getElementById("note");
  var flashEl = document.getElementById("flash");
  var errorEl = document.getElementById("judge-error");
  var reviseLink = form.querySelector("[data-action=revise]");
  var csrf = form.querySelector("input[name=csrfmiddlewaretoken]").value;

  var state = config.state;             // mode, assignment, judgement, back, label, topic, parts
  state.parts = {                       // as rendered with the page, so that Esc can come back to it
    topic: slots.topic.innerHTML,
    document: slots.document.innerHTML,
    progress: slots.progress.innerHTML,
  };
  var itemBefore = state.mode === "revise" ? null : state;  // what Esc returns to
  var saved = null;                     // note and facets typed on the item before revising
  var busy = false;
  var shownAt = performance.now();      // when the current document appeared
  var elapsed = 0;                      // ms already spent on this item before a revise detour
  var guardUntil = 0;

  // ------------------------------------------------------------------------------------ helpers

  function now() { return performance.now(); }

  function flash(text) {
    if (!text) return;
    flashEl.textContent = text;
    flashEl.classList.remove("show");
    void flashEl.offsetWidth;  // restart the animation
    flashEl.classList.add("show");
  }

  function showError(text) {
    errorEl.textContent = text || "";
    errorEl.hidden = !text;
  }

  function facetInputs(name) {
    return form.querySelectorAll('input[type=radio][name="facet_' + name + '"]');
  }

  function readFacets() {
    var out = {};
    var checked = form.querySelectorAll("input[type=radio]:checked");
    for (var i = 0; i < checked.length; i++) out[checked[i].name.slice(6)] = checked[i].value;
    return out;
  }

  function writeFacets(values) {
    var radios = form.querySelectorAll("input[type=radio]");
    for (var i = 0; i < radios.length; i++) {
      var name = radios[i].name.slice(6);
      radios[i].checked = !!values && values[name] === radios[i].value;
    }
  }

  function markCurrent(label) {
    var buttons = form.querySelectorAll("button.grade");
    for (var i = 0; i < buttons.length; i++) {
      var b = buttons[i];
      var on = !!label && (b.name === "unrateable" ? label.unrateable
        : !label.unrateable && String(label.grade) === b.value);
      b.classList.toggle("current", on);
    }
  }

  function press(button) {
    if (!button) return;
    button.classList.add("pressed");
    setTimeout(function () { button.classList.remove("pressed"); }, 250);
  }

  // ------------------------------------------------------------------------------------ rendering

  function element(tag, className, text) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text !== undefined) el.textContent = text;
    return el;
  }

  // The parts of _topic.html and _document.html, built from the API's payload (text nodes only, but the
  // document body: HTML sanitised by the server, as the templates insert it).
  function topicPart(topic) {
    var box = element("div", "topic");
    box.dataset.qid = topic.qid;
    var eyebrow = element("p", "eyebrow", "Topic ");
    eyebrow.appendChild(element("span", "qid", topic.qid));
    box.appendChild(eyebrow);
    box.appendChild(element("h1", "query", topic.query));
    if (topic.description) box.appendChild(element("p", "topic-desc", topic.description));
    if (topic.narrative) {
      var narrative = element("p", "topic-narrative");
      narrative.appendChild(element("span", "eyebrow", "What counts"));
      narrative.appendChild(document.createTextNode(" " + topic.narrative));
      box.appendChild(narrative);
    }
    return box.outerHTML;
  }

  function documentPart(doc) {
    var article = element("article", "doc");
    var heading = element("h2", "doc-title", doc.title || "(untitled)");
    heading.id = "doc-title";
    article.appendChild(heading);
    if (doc.url) {
      var line = element("p", "doc-url");
      var link = element("a", "", doc.url);
      link.href = doc.url;
      link.target = "_blank";
      link.rel = "noopener noreferrer nofollow";
      line.appendChild(link);
      article.appendChild(line);
    }
    var body = element("div", "doc-body");
    body.innerHTML = doc.body;
    article.appendChild(body);
    return article.outerHTML;
  }

  function itemState(lease) {
    return {
      mode: "item", assignment: lease.assignment, judgement: null, back: 0, label: null,
      topic: lease.topic.qid, flash: "", error: "",
      parts: { topic: topicPart(lease.topic), document: documentPart(lease.document),
               progress: slots.progress.innerHTML },
    };
  }

  function screenKey(data) {
    return data.mode + ":" + (data.assignment || data.judgement || "");
  }

  function render(data) {
    var prevMode = state.mode;
    if (prevMode === "item" && data.mode !== "item") {
      elapsed += now() - shownAt;  // the clock stops while the rater revises
      saved = { note: note.value, facets: readFacets() };
    }
    var sameItem = data.mode === "item" && !!itemBefore && itemBefore.mode === "item"
      && itemBefore.assignment === data.assignment;
    var newScreen = screenKey(data) !== screenKey(state);
    var newTopic = !!data.topic && data.topic !== state.topic;

    slots.topic.innerHTML = data.parts.topic;
    slots.document.innerHTML = data.parts.document;
    slots.progress.innerHTML = data.parts.progress;
    state = data;
    root.dataset.mode = data.mode;
    form.elements.assignment.value = data.assignment || "";
    form.elements.judgement.value = data.judgement || "";
    form.action = data.mode === "revise" ? urls.revise : urls.submit;
    reviseLink.href = urls.revise + (data.mode === "revise" ? "?back=" + (data.back + 1) : "");

    if (data.mode === "revise") {
      markCurrent(data.label);
      writeFacets(data.label.facets);
      note.value = data.label.note || "";
    } else {
      markCurrent(null);
      if (!sameItem) {
        writeFacets(null);
        note.value = "";
        elapsed = 0;
        shownAt = now();
      } else if (prevMode !== "item") {
        if (saved) { writeFacets(saved.facets); note.value = saved.note; }
        shownAt = now();
      }
      saved = null;
      itemBefore = data;
    }
    if (newTopic) {
      var topic = slots.topic.querySelector(".topic");
      if (topic) topic.classList.add("changed");
    }
    if (newScreen) {
      window.scrollTo(0, 0);
      guardUntil = now() + GUARD_MS;
    }
  }

  function apply(result) {
    var data = result.data;
    if (data.parts) render(data);
    showError(data.error || "");
    if (!data.error) flash(data.flash);
  }

  function request(url, options, handle) {
    busy = true;
    root.classList.add("busy");
    options.headers = Object.assign({ "Accept": "application/json", "X-CSRFToken": csrf }, options.headers);
    options.credentials = "same-origin";
    return fetch(url, options).then(function (response) {
      if (response.redirected) {
        return { status: 401, data: { error: "You were logged out. Reload the page to log in again." } };
      }
      return response.json().then(
        function (data) { return { status: response.status, data: data }; },
        function () {
          return { status: response.status, data: { error: "The server could not do that (" +
            response.status + "). Nothing was saved; reload the page to continue." } };
        });
    }).catch(function () {
      return { status: 0, data: { error: "Could not reach the server. Nothing was saved; try again." } };
    }).then(function (result) {
      busy = false;
      root.classList.remove("busy");
      (handle || apply)(result);
      return result;
    });
  }

  // The first message of an API error: `{"detail": "..."}` or `{"field": ["..."]}`.
  function apiMessage(data) {
    if (data.error) return data.error;
    if (typeof data.detail === "string") return data.detail;
    var fields = Object.keys(data);
    for (var i = 0; i < fields.length; i++) {
      var value = data[fields[i]];
      var text = Array.isArray(value) ? value[0] : value;
      if (typeof text === "string") return fields[i] === "detail" ? text : fields[i] + ": " + text;
    }
    return "The server could not do that. Nothing was saved; reload the page to continue.";
  }

  var progressBusy = false;
  var progressAgain = false;
  var progressEvery = config.progress_every_ms || 0;  // JUDGE_PROGRESS_REFRESH_SECONDS
  var progressAt = -Infinity;           // when the last refresh was asked for
  var progressTimer = null;
  var progressUrgent = false;           // a new topic came while a refresh was under way

  // The progress bars, fetched after the next item is on screen: at most once per progressEvery ms (a
  // count over the whole pool costs the server more than the judgement itself), the last key press of
  // a burst refreshed when the interval is over; one request at a time. `urgent` (the next item is of
  // another topic) refreshes at once, interval or not: the topic bar would otherwise show the previous
  // topic's counts under the new topic for up to an interval.
  function refreshProgress(urgent) {
    if (urgent) {
      if (progressTimer !== null) { clearTimeout(progressTimer); progressTimer = null; }
      progressAt = -Infinity;
      if (progressBusy) { progressUrgent = true; progressAgain = true; return; }
    }
    if (progressTimer !== null) return;  // a refresh is already due
    var wait = progressAt + progressEvery - now();
    if (wait > 0) {
      progressTimer = setTimeout(function () { progressTimer = null; refreshProgress(); }, wait);
      return;
    }
    if (progressBusy) { progressAgain = true; return; }
    progressBusy = true;
    progressAt = now();
    fetch(urls.progress, { headers: { "Accept": "application/json" }, credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.json() : null; })
      .catch(function () { return null; })
      .then(function (data) {
        progressBusy = false;
        if (data && data.progress) {
          slots.progress.innerHTML = data.progress;
          state.parts.progress = data.progress;
          if (itemBefore) itemBefore.parts.progress = data.progress;
        }
        if (progressAgain) {
          var again = progressUrgent;
          progressAgain = false;
          progressUrgent = false;
          refreshProgress(again);
        }
      });
  }

  // A label for the leased item, and the next item, in one request to the rater API.
  function judgeAndNext(fields, flashText) {
    var url = urls.loop.replace("/0/", "/" + state.assignment + "/");
    request(url, { method: "POST", body: JSON.stringify(fields),
                   headers: { "Content-Type": "application/json" } }, function (result) {
      if (result.status === 201 && result.data.next) {
        var topicBefore = state.topic;
        render(itemState(result.data.next));
        showError("");
        flash(flashText);
        refreshProgress(state.topic !== topicBefore);
      } else if (result.status === 201) {
        post(urls.judge, {}).then(function () { flash(flashText); });  // nothing left: the page says so
      } else {
        // refused (judged already, the lease went to another rater...) or invalid: nothing was saved;
        // the page's own endpoint gives the item the rater holds now, or the next one
        var message = apiMessage(result.data);
        if (result.status === 400 && !result.data.detail) { showError(message); return; }
        post(urls.judge, {}).then(function () { showError(message); });
      }
    });
  }

  function post(url, fields) {
    var body = new URLSearchParams();
    Object.keys(fields).forEach(function (k) { body.append(k, fields[k]); });
    return request(url, { method: "POST", body: body });
  }

  // ------------------------------------------------------------------------------------ actions

  function ready() { return !busy && now() >= guardUntil; }

  function missingFacet() {
    var chosen = readFacets();
    for (var i = 0; i < config.required.length; i++) {
      if (!chosen[config.required[i].name]) return config.required[i];
    }
    return null;
  }

  function label(choice, button) {
    if ((state.mode !== "item" && state.mode !== "revise") || !ready()) return;
    if (!choice.unrateable) {
      var missing = missingFacet();
      if (missing) {
        showError("Choose " + missing.label + " first: it is required.");
        var fieldset = form.querySelector('fieldset[data-facet="' + missing.name + '"]');
        if (fieldset) { fieldset.classList.remove("wanted"); void fieldset.offsetWidth; fieldset.classList.add("wanted"); }
        return;
      }
    }
    var fields = readFacets();
    press(button);
    if (state.mode === "revise") {
      var out = {};
      Object.keys(fields).forEach(function (k) { out["facet_" + k] = fields[k]; });
      out.note = note.value;
      if (choice.unrateable) out.unrateable = "1"; else out.grade = String(choice.grade);
      out.judgement = state.judgement;
      post(urls.revise, out);
      return;
    }
    var facets = {};
    Object.keys(fields).forEach(function (name) {  // each choice as the rubric stores it
      var stored = (config.choices[name] || []).filter(function (c) { return String(c) === fields[name]; });
      facets[name] = stored.length ? stored[0] : fields[name];
    });
    var body = { facets: facets, note: note.value, seconds: (elapsed + now() - shownAt) / 1000 };
    if (choice.unrateable) body.unrateable = true; else body.grade = choice.grade;
    judgeAndNext(body, "Saved: " + (choice.unrateable ? "Unrateable" : gradeLabel(choice.grade)));
  }

  function gradeLabel(value) {
    var keys = Object.keys(config.grades);
    for (var i = 0; i < keys.length; i++) {
      if (config.grades[keys[i]].value === value) return config.grades[keys[i]].label;
    }
    return String(value);
  }

  function skip() {
    if (state.mode !== "item" || !ready()) return;
    press(form.querySelector("[data-action=skip]"));
    post(urls.skip, { assignment: state.assignment });
  }

  function revisePrevious() {
    if (busy) return;
    var back = state.mode === "revise" ? state.back + 1 : 0;
    request(urls.revise + "?back=" + back, { method: "GET" });
  }

  function returnToItem() {
    if (state.mode !== "revise") return;
    if (itemBefore) {
      // the bars on screen are the newest (the revise screen's came from the server after the item's):
      // the item comes back with them, never with the older ones it was shown with
      itemBefore.parts.progress = slots.progress.innerHTML;
      render(itemBefore);
      showError("");
    } else {
      window.location.assign(urls.judge);
    }
  }

  function toggleFacet(choice) {
    if (state.mode !== "item" && state.mode !== "revise") return;
    var inputs = facetInputs(choice.facet);
    for (var i = 0; i < inputs.length; i++) {
      if (inputs[i].value === choice.value) inputs[i].checked = !inputs[i].checked;
    }
    var fieldset = form.querySelector('fieldset[data-facet="' + choice.facet + '"]');
    if (fieldset) fieldset.classList.remove("wanted");
  }

  function gradeButton(value) {
    return form.querySelector('button.grade[name=grade][value="' + value + '"]');
  }

  // ------------------------------------------------------------------------------------ events

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    var t = e.target;
    var typing = t && (t.tagName === "TEXTAREA" || t.tagName === "SELECT" || t.isContentEditable
      || (t.tagName === "INPUT" && t.type !== "radio" && t.type !== "checkbox"));
    if (typing) {
      if (e.key === "Escape") { e.preventDefault(); t.blur(); }
      return;
    }
    if (e.repeat) return;
    var key = e.key;
    var lower = key.length === 1 ? key.toLowerCase() : key;
    // the page's own keys first, in either case (judgements/rubrics.py RESERVED_KEYS): no rubric may
    // use them, and one stored before that rule still cannot hide them
    if (key === "Escape") { returnToItem(); return; }
    if (lower === "n") { if (state.mode !== "done") { e.preventDefault(); note.focus(); } return; }
    if (lower === "u") { e.preventDefault(); revisePrevious(); return; }
    if (lower === "s") { e.preventDefault(); skip(); return; }
    var grade = config.grades[key] || gradesByLowerKey[lower];
    if (grade) { e.preventDefault(); label({ grade: grade.value }, gradeButton(grade.value)); return; }
    if (config.unrateable && lower === config.unrateable.toLowerCase()) {
      e.preventDefault();
      label({ unrateable: true }, form.querySelector("button.grade.unrateable"));
      return;
    }
    var facet = config.facets[lower];
    if (facet) { e.preventDefault(); toggleFacet(facet); }
  });

  form.addEventListener("submit", function (e) {
    e.preventDefault();
    var b = e.submitter;
    if (!b) return;
    b.blur();  // a focused button would take the next Space or Enter as another judgement
    if (b.dataset.action === "skip") skip();
    else if (b.name === "unrateable") label({ unrateable: true }, b);
    else if (b.name === "grade") label({ grade: Number(b.value) }, b);
  });

  form.addEventListener("click", function (e) {
    var link = e.target.closest("a[data-action]");
    if (!link) return;
    e.preventDefault();
    link.blur();
    if (link.dataset.action === "revise") revisePrevious();
    else if (link.dataset.action === "return") returnToItem();
  });

  form.addEventListener("change", function (e) {
    if (e.target.type === "radio") {
      var fieldset = e.target.closest("fieldset");
      if (fieldset) fieldset.classList.remove("wanted");
    }
  });

  flashEl.addEventListener("animationend", function () { flashEl.classList.remove("show"); });
  root.classList.add("scripted");
  // A GET of the page leases nothing (a link from elsewhere must not make the rater hold an item): the
  // page asks for its first item here, by POST with the CSRF token.
  if (state.mode === "start") post(urls.judge, {});
})();
