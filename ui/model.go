package ui

import (
	"slices"
	"sort"

	"github.com/hookscope/hookscope/storage"
)

// pageSize is how many rows one store query loads. The list asks for the
// next page when the user scrolls near the end, so a store with a million
// deliveries costs the window one page, not a million rows.
const pageSize = 300

// listModel is the deliveries list's state: the loaded rows of the current
// filter, newest first (ids descending), and how many match in all. It is
// used on the UI goroutine only and has no Fyne in it, so the benchmark
// and the tests drive it directly.
type listModel struct {
	filter listFilter
	rows   []storage.Summary
	// total is the number of deliveries matching the filter, -1 until counted.
	total int64
	// exhausted is true once a page came back short: nothing older matches.
	exhausted bool
	// gen changes with every filter change, so results of a query for an
	// older filter are dropped when they arrive.
	gen     int
	loading bool
}

// setFilter starts over with f and returns the generation that its query
// results must carry.
func (m *listModel) setFilter(f listFilter) int {
	m.gen++
	m.filter = f
	m.rows = nil
	m.total = -1
	m.exhausted = false
	m.loading = true
	return m.gen
}

// nextPage returns the id the page after the loaded rows starts below
// (0: from the newest).
func (m *listModel) nextPage() int64 {
	if n := len(m.rows); n > 0 {
		return m.rows[n-1].ID
	}
	return 0
}

// above counts the loaded rows newer than id (all of them when id is 0).
func (m *listModel) above(id int64) int {
	if id == 0 {
		return len(m.rows)
	}
	i, _ := m.find(id)
	return i
}

// needMore says whether showing row i should load the next page.
func (m *listModel) needMore(i int) bool {
	return !m.exhausted && !m.loading && i >= len(m.rows)-pageSize/3
}

// applyPage appends a page loaded for generation gen.
func (m *listModel) applyPage(gen int, page []storage.Summary, limit int) bool {
	if gen != m.gen {
		return false
	}
	m.loading = false
	if len(page) < limit {
		m.exhausted = true
	}
	// A live update may already have added some of these rows.
	last := int64(-1)
	if n := len(m.rows); n > 0 {
		last = m.rows[n-1].ID
	}
	for _, s := range page {
		if last < 0 || s.ID < last {
			m.rows = append(m.rows, s)
		}
	}
	return true
}

// applyCount sets the total for generation gen.
func (m *listModel) applyCount(gen int, n int64) {
	if gen == m.gen {
		m.total = n
	}
}

// find returns the index of id among the rows (ids descending).
func (m *listModel) find(id int64) (int, bool) {
	i := sort.Search(len(m.rows), func(i int) bool { return m.rows[i].ID <= id })
	return i, i < len(m.rows) && m.rows[i].ID == id
}

// applyLive merges a batch of changed deliveries: matching holds those of
// ids that match the current filter (as the store answered for generation
// gen). New ones are inserted in order, changed ones replaced, and loaded
// ones that no longer match removed. It reports whether anything changed.
func (m *listModel) applyLive(gen int, ids []int64, matching []storage.Summary) bool {
	if gen != m.gen {
		return false
	}
	changed := false
	match := make(map[int64]bool, len(matching))
	for _, s := range matching {
		match[s.ID] = true
		i, ok := m.find(s.ID)
		switch {
		case ok:
			if m.rows[i] != s {
				m.rows[i] = s
				changed = true
			}
		case i < len(m.rows) || m.exhausted || len(m.rows) == 0 || i == 0:
			// Inside the loaded range (or newer than everything): it
			// belongs here. Older than the loaded pages: paging brings it.
			m.rows = slices.Insert(m.rows, i, s)
			if m.total >= 0 {
				m.total++
			}
			changed = true
		}
	}
	for _, id := range ids {
		if match[id] {
			continue
		}
		if i, ok := m.find(id); ok {
			m.rows = slices.Delete(m.rows, i, i+1)
			if m.total > 0 {
				m.total--
			}
			changed = true
		}
	}
	return changed
}

// applyNewest merges the newest matching rows (up to limit, newest
// first) read after the store changed: new ones are inserted, changed
// ones replaced. A full page older ids than the newest loaded one cannot
// fill means deliveries in between were not read: the list starts over
// from this page. It reports whether anything changed.
func (m *listModel) applyNewest(gen int, page []storage.Summary, limit int) bool {
	if gen != m.gen {
		return false
	}
	if n := len(page); n == limit && len(m.rows) > 0 && page[n-1].ID > m.rows[0].ID {
		m.rows = append([]storage.Summary(nil), page...)
		m.exhausted = false
		m.total = -1
		return true
	}
	return m.applyLive(gen, nil, page)
}

// remove drops deleted deliveries.
func (m *listModel) remove(ids ...int64) {
	for _, id := range ids {
		if i, ok := m.find(id); ok {
			m.rows = slices.Delete(m.rows, i, i+1)
			if m.total > 0 {
				m.total--
			}
		}
	}
}
