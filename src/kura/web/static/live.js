// Live progress for the run page: poll the status JSON every 2 s and update the panel,
// the charts (server-drawn SVG) and the log tail. Stops once the run has ended.
"use strict";
(function () {
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
    if (d.fraction === null) {
      bar.removeAttribute("value");
    } else {
      bar.value = d.fraction;
    }
    const block = panel.querySelector('[data-block="diagnosis"]');
    block.hidden = !d.diagnosis;
    if (d.diagnosis) {
      setText("diagnosis.code", d.diagnosis.code);
      setText("diagnosis.message", d.diagnosis.message);
      setText("diagnosis.next", d.diagnosis.next);
    }
    setText("log", doc.log || "No log yet.");
    for (const name of ["loss", "lr"]) {
      const holder = document.querySelector('[data-chart="' + name + '"]');
      if (holder.innerHTML !== doc.charts[name]) {
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
