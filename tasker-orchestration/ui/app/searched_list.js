// A list the API answers whole (templates, schedules): searched and paged here, in the browser,
// LIST_PAGE rows a page. The search text and the page number live in the page's address
// (#/templates?q=billing&page=2), so a reload, a link or a new tab shows the same rows.

const LIST_PAGE = 50; // rows a page

// The search text and page number the address names (page 1 when it names none or a bad one).
function listAddressState() {
  const q = routeQuery();
  const page = Number.parseInt(q.get('page') || '', 10);
  return { q: q.get('q') || '', page: page > 0 ? page : 1 };
}

// Writes `#/<path>?q=…&page=…` over the current address (an empty search and page 1 are left
// out). replaceState: no new history entry and no hashchange, so the view is not drawn again.
function showListAddress(path, state) {
  const q = new URLSearchParams();
  if (state.q.trim()) q.set('q', state.q.trim());
  if (state.page > 1) q.set('page', String(state.page));
  const text = q.toString();
  history.replaceState(null, '', `#/${path}${text ? `?${text}` : ''}`);
}

// A table.list of fixed layout: its columns keep the widths lists.css gives their <col>s
// (`cols`: [class, heading] pairs, each <col> gets class `c-<class>`), and a long cell wraps or
// is clipped instead of widening the page.
function fitTable(attrs, cols, rows, empty) {
  const t = table(attrs, cols.map((c) => c[1]), rows, empty);
  t.classList.add('fit');
  t.insertBefore(h('colgroup', {}, cols.map(([name]) => h('col', { class: `c-${name}` }))), t.firstChild);
  return t;
}

// A cell's text on one line, clipped with "…" when it is too long; the whole text in its title.
const clipped = (text, attrs, ...kids) =>
  h('span', Object.assign({ class: 'clip', title: text }, attrs), kids.length ? kids : text);

// "« Previous", "51–100 of 203", "Next »": div.pager#id; go(page) shows another page.
function listPager(id, page, total, go) {
  const last = Math.max(1, Math.ceil(total / LIST_PAGE));
  const from = total ? (page - 1) * LIST_PAGE + 1 : 0;
  const to = Math.min(page * LIST_PAGE, total);
  return h('div', { id, class: 'pager list-pager', 'data-page': page, 'data-pages': last, 'data-total': total },
    h('button', { type: 'button', class: 'prev-page', text: '« Previous', disabled: page <= 1, onclick: () => go(page - 1) }),
    h('span', { class: 'pager-range', text: total ? `${from}–${to} of ${total}` : '0 of 0' }),
    h('button', { type: 'button', class: 'next-page', text: 'Next »', disabled: page >= last, onclick: () => go(page + 1) }));
}

// A searched, paged list at `#/<path>`: `search` (input#<searchId>) and `box` (the table and its
// pager) to put on the page, and show(items) to draw it (again, after a refresh) over `items`.
// Options: `id` (the table's), `cols` (see fitTable), `label(item)` (the text searched, case
// aside: "namespace/name"), `row(item)` (a <tr> or several), `empty` (no items at all), `noun`
// (plural, for the placeholder and "no match").
function searchedList({ path, id, searchId, cols, label, row, empty, noun }) {
  const state = listAddressState();
  let items = [];
  const search = h('input', {
    id: searchId, type: 'search', class: 'list-search', value: state.q, autocomplete: 'off', spellcheck: 'false',
    placeholder: `search ${noun} by namespace/name…`, 'aria-label': `Search ${noun} by namespace or name`,
  });
  const box = h('div', { class: 'searched-list' });
  const draw = () => {
    const q = state.q.trim().toLowerCase();
    const shown = q ? items.filter((item) => label(item).toLowerCase().includes(q)) : items;
    // A page past the last (fewer matches than before, a stale link): the last page.
    state.page = Math.min(state.page, Math.max(1, Math.ceil(shown.length / LIST_PAGE)));
    showListAddress(path, state);
    const start = (state.page - 1) * LIST_PAGE;
    const rows = shown.slice(start, start + LIST_PAGE).flatMap((item) => row(item));
    box.replaceChildren(
      fitTable({ id, 'data-matches': shown.length }, cols, rows, q ? `No ${noun} match “${state.q.trim()}”.` : empty),
      h('div', { class: 'list-foot' },
        listPager(`${id}-pager`, state.page, shown.length, go),
        q && h('span', { class: 'muted list-total', text: `${items.length} ${noun} in all` })));
  };
  // Another page: drawn, and scrolled to the list's top when that is out of sight.
  const go = (page) => {
    state.page = page;
    draw();
    if (box.getBoundingClientRect().top < 0) box.scrollIntoView();
  };
  search.addEventListener('input', () => {
    state.q = search.value;
    state.page = 1;
    draw();
  });
  return { search, box, show: (list) => { items = list; draw(); } };
}
