'use strict';

// The /locks page: renders the snapshots that /locks/events sends once a second.
(() => {
  const KEPT_POINTS = 120; // two minutes of samples in the chart
  const CHART_HEIGHT = 260;

  const tbody = document.querySelector('#locks tbody');
  const emptyRow = tbody.querySelector('tr.empty');
  const status = document.getElementById('status');
  const chartBox = document.getElementById('chart');
  const rows = new Map(); // kind + ':' + lock name -> { tr, ttl, ttlMillis, receivedAt, ... }
  // Hand-offs before acquisitions: often equal, and the line drawn last stays visible on top.
  const series = ['handOffsPerSecond', 'acquiredPerSecond', 'busyPerSecond', 'lostPerSecond', 'waitP50Millis', 'waitP99Millis'];
  const data = [[], [], [], [], [], [], []]; // time, then one array per series

  const chart = new uPlot({
    width: chartBox.clientWidth,
    height: CHART_HEIGHT,
    scales: { x: { time: true }, rate: {}, ms: {} },
    legend: { live: false }, // labels only: the values of the last second are listed below the chart
    axes: [
      { incrs: [1, 2, 5, 10, 15, 30, 60] }, // whole seconds
      { scale: 'rate', label: 'per second' },
      { scale: 'ms', side: 1, label: 'wait (ms)', grid: { show: false } },
    ],
    series: [
      {},
      { label: 'handed off/s', scale: 'rate', stroke: '#00838f', width: 2 },
      { label: 'acquired/s', scale: 'rate', stroke: '#1565c0', width: 2 },
      { label: 'given up/s', scale: 'rate', stroke: '#e65100', width: 2 },
      { label: 'lost/s', scale: 'rate', stroke: '#b71c1c', width: 2 },
      { label: 'wait p50 (ms)', scale: 'ms', stroke: '#2e7d32', width: 2, dash: [6, 4] },
      { label: 'wait p99 (ms)', scale: 'ms', stroke: '#6a1b9a', width: 2, dash: [2, 3] },
    ],
    hooks: {
      // Tells the page's reader (and its browser test) how many samples the chart has drawn.
      draw: [u => { chartBox.dataset.drawnPoints = String(u.data[0].length); }],
    },
  }, data, chartBox);
  new ResizeObserver(() => chart.setSize({ width: chartBox.clientWidth, height: CHART_HEIGHT })).observe(chartBox);

  function text(value, unit) {
    return value == null ? '–' : value.toFixed(1) + unit;
  }

  function cell(tr, tag, className) {
    const element = document.createElement(tag);
    if (className) {
      element.className = className;
    }
    tr.appendChild(element);
    return element;
  }

  function row(key, lock) {
    let entry = rows.get(key);
    if (!entry) {
      const tr = document.createElement('tr');
      tr.dataset.lock = lock.name;
      tr.dataset.kind = lock.kind;
      const name = cell(tr, 'th');
      name.scope = 'row';
      name.textContent = lock.name; // textContent: a lock name is shown as text, never as markup
      cell(tr, 'td', 'kind').textContent = lock.kind;
      entry = {
        tr,
        holder: cell(tr, 'td').appendChild(document.createElement('code')),
        ttl: cell(tr, 'td', 'number ttl'),
        fence: cell(tr, 'td', 'number fence'),
        waiting: cell(tr, 'td', 'number waiting'),
        shared: cell(tr, 'td', 'shared'),
      };
      rows.set(key, entry);
    }
    return entry;
  }

  function plural(count, one, many) {
    return count + ' ' + (count === 1 ? one : many);
  }

  // A read-write lock's readers, or a semaphore's permits and holders.
  function shared(lock) {
    if (lock.permits != null) {
      return plural(lock.permits, 'permit', 'permits') + ', ' + plural(lock.permitHolders, 'holder', 'holders');
    }
    return lock.readers ? plural(lock.readers, 'reader', 'readers') : '–';
  }

  function renderTable(locks, receivedAt) {
    const seen = new Set();
    for (const lock of locks) {
      const key = lock.kind + ':' + lock.name;
      const entry = row(key, lock);
      entry.holder.textContent = lock.holder ?? '–';
      entry.fence.textContent = lock.fencingToken == null ? '–' : String(lock.fencingToken);
      entry.waiting.textContent = lock.waiting == null ? '–' : String(lock.waiting);
      entry.shared.textContent = shared(lock);
      entry.ttlMillis = lock.ttlMillis;
      entry.receivedAt = receivedAt;
      tbody.appendChild(entry.tr); // in the snapshot's order (by name, then kind)
      seen.add(key);
    }
    for (const [key, entry] of rows) {
      if (!seen.has(key)) {
        entry.tr.remove();
        rows.delete(key);
      }
    }
    emptyRow.hidden = rows.size > 0;
    tickTtl();
  }

  // Counts each lease down between two snapshots.
  function tickTtl() {
    const now = performance.now();
    for (const entry of rows.values()) {
      entry.ttl.textContent = entry.ttlMillis == null
          ? '–'
          : text(Math.max(0, entry.ttlMillis - (now - entry.receivedAt)) / 1000, ' s');
    }
  }
  setInterval(tickTtl, 200);

  function renderActivity(snapshot) {
    data[0].push(snapshot.at / 1000);
    series.forEach((name, i) => data[i + 1].push(snapshot[name]));
    if (data[0].length > KEPT_POINTS) {
      data.forEach(values => values.shift());
    }
    chart.setData(data);
    for (const dd of document.querySelectorAll('#latest dd')) {
      const name = dd.dataset.metric;
      dd.textContent = text(snapshot[name], name.endsWith('Millis') ? ' ms' : '');
    }
  }

  const events = new EventSource('/locks/events');
  events.onopen = () => {
    status.textContent = 'Live';
    status.className = 'live';
  };
  events.onerror = () => {
    status.textContent = 'Connection lost, reconnecting…';
    status.className = 'lost';
  };
  events.addEventListener('snapshot', event => {
    const snapshot = JSON.parse(event.data);
    renderTable(snapshot.locks, performance.now());
    renderActivity(snapshot);
  });
})();
