// Live progress for the run page: poll the status JSON every 2 s and update the panel,
// the charts (server-drawn SVG), the latest samples and the log tail. Stops once the run
// has ended. On the run list: re-read the page every few seconds and swap the table in.
"use strict";
(function () {
  const listing = document.querySelector("[data-refresh]");
  if (listing) {
    const every = Number(listing.dataset.refreshEvery) || 5000;
    const refresh = async function () {
      try {
        const response = await fetch(listing.dataset.refresh, {
          credentials: "same-origin",
          headers: { Accept: "text/html" },
        });
        if (response.ok) {
          const doc = new DOMParser().parseFromString(await response.text(), "text/html");
          const fresh = doc.querySelector("[data-refresh]");
          if (fresh && fresh.innerHTML !== listing.innerHTML) {
            listing.innerHTML = fresh.innerHTML;
          }
        }
      } catch (error) {
        // the next round tries again
      }
      window.setTimeout(refresh, every);
    };
    window.setTimeout(refresh, every);
  }
  for (const form of document.querySelectorAll("form[data-confirm]")) {
    form.addEventListener("submit", function (event) {
      if (!window.confirm(form.dataset.confirm)) {
        event.preventDefault();
      }
    });
  }
  // The log box shows its newest lines: scrolled to the bottom, and kept there while new
  // lines arrive unless the reader scrolled up to read older ones.
  function atBottom(box) {
    return box.scrollHeight - box.scrollTop - box.clientHeight < 24;
  }
  function showNewest(box) {
    box.scrollTop = box.scrollHeight;
  }
  for (const box of document.querySelectorAll("pre.log")) {
    showNewest(box);
  }
  for (const details of document.querySelectorAll("details.attempt-log")) {
    details.addEventListener("toggle", function () {
      for (const box of details.querySelectorAll("pre.log")) {
        showNewest(box);
      }
    });
  }
  const panel = document.querySelector("[data-live]");
  if (!panel) {
    return;
  }
  const url = panel.dataset.live;
  const note = panel.querySelector('[data-field="live-note"]');

  function setText(name, value) {
    for (const node of document.querySelectorAll('[data-field="' + name + '"]')) {
      node.textContent = value;
    }
  }

  function update(doc) {
    const d = doc.display;
    for (const name of ["status", "message", "step", "epoch", "loss_ema", "loss", "speed",
                        "eta", "current_step", "attempt"]) {
      setText(name, d[name]);
    }
    const status = panel.querySelector('[data-field="status"]');
    status.className = "status status-" + d.status.replace(/ /g, "-");
    const bar = panel.querySelector('[data-field="fraction"]');
    if (bar && d.fraction === null) {
      bar.removeAttribute("value");
    } else if (bar) {
      bar.value = d.fraction;
    }
    panel.querySelector('[data-block="eta"]').hidden = !d.live;
    const block = panel.querySelector('[data-block="diagnosis"]');
    block.hidden = !d.diagnosis;
    if (d.diagnosis) {
      setText("diagnosis.code", d.diagnosis.code);
      setText("diagnosis.message", d.diagnosis.message);
      setText("diagnosis.remedy", d.diagnosis.remedy);
      panel.querySelector('[data-block="remedy"]').hidden = !d.diagnosis.remedy;
    }
    const next = panel.querySelector('[data-list="next"]');
    next.replaceChildren();
    for (const item of d.next) {
      const row = document.createElement("li");
      const code = document.createElement("code");
      code.className = "command";
      code.textContent = item.command;
      row.append(code);
      if (item.why) {
        row.append(" — " + item.why);
      }
      next.append(row);
    }
    panel.querySelector('[data-block="next"]').hidden = d.next.length === 0;
    for (const box of document.querySelectorAll('[data-field="log"]')) {
      const follow = atBottom(box);
      box.textContent = doc.log || "No log yet.";
      if (follow) {
        showNewest(box);
      }
    }
    const cancelForm = document.querySelector('[data-block="cancel"]');
    if (cancelForm) {
      cancelForm.hidden = !d.live;
    }
    for (const name of Object.keys(doc.charts)) {
      const holder = document.querySelector('[data-chart="' + name + '"]');
      if (holder && holder.innerHTML !== doc.charts[name]) {
        holder.innerHTML = doc.charts[name];
      }
    }
    return d.terminal;
  }

  async function poll() {
    let finished = false;
    try {
      const response = await fetch(url, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!response.ok) {
        throw new Error("status " + response.status);
      }
      finished = update(await response.json());
      note.textContent = finished ? "" : "Updating every 2 s.";
    } catch (error) {
      note.textContent = "Live update failed (" + error.message + "); retrying.";
    }
    if (!finished) {
      window.setTimeout(poll, 2000);
    }
  }

  if (panel.dataset.terminal !== "true") {
    window.setTimeout(poll, 2000);
  }
})();
