//! A map from dense, increasing ids to values that live a short while (the
//! transfers in flight): a deque over the window from the oldest live id to the
//! newest, so memory follows what is in flight, not how many there ever were.

use std::collections::VecDeque;

/// Values keyed by increasing `u64` ids. See the module docs.
#[derive(Debug)]
pub struct IdWindow<T> {
    base: u64,
    slots: VecDeque<Option<T>>,
    live: usize,
}

impl<T> Default for IdWindow<T> {
    fn default() -> Self {
        IdWindow {
            base: 0,
            slots: VecDeque::new(),
            live: 0,
        }
    }
}

impl<T> IdWindow<T> {
    /// Stores `value` under `id`; ids below the window are ignored.
    pub fn insert(&mut self, id: u64, value: T) {
        if id < self.base {
            return;
        }
        let i = (id - self.base) as usize;
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        if self.slots[i].replace(value).is_none() {
            self.live += 1;
        }
    }

    /// The value under `id`.
    pub fn get(&self, id: u64) -> Option<&T> {
        let i = id.checked_sub(self.base)? as usize;
        self.slots.get(i)?.as_ref()
    }

    /// The value under `id`, to change.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let i = id.checked_sub(self.base)? as usize;
        self.slots.get_mut(i)?.as_mut()
    }

    /// Removes and returns the value under `id`.
    pub fn take(&mut self, id: u64) -> Option<T> {
        let i = id.checked_sub(self.base)? as usize;
        let v = self.slots.get_mut(i)?.take()?;
        self.live -= 1;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(v)
    }

    /// The stored (id, value) pairs, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &T)> {
        let base = self.base;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, v)| Some((base + i as u64, v.as_ref()?)))
    }

    /// Values stored.
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether nothing is stored.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_slides_past_taken_ids() {
        let mut w = IdWindow::default();
        for id in 0..5 {
            w.insert(id, id * 10);
        }
        assert_eq!(w.take(1), Some(10));
        assert_eq!(w.take(0), Some(0));
        assert_eq!((w.base, w.slots.len(), w.len()), (2, 3, 3));
        assert_eq!(w.get(3), Some(&30));
        assert_eq!(w.take(0), None);
        w.insert(9, 90);
        assert_eq!(w.get(9), Some(&90));
        assert_eq!(w.len(), 4);
    }
}
