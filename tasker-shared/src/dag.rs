//! The step graph of a template: indices, parents, children, and cycle detection.

use std::collections::HashMap;

/// A directed acyclic graph over step names, by index into the template's step list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dag {
    names: Vec<String>,
    parents: Vec<Vec<usize>>,
    children: Vec<Vec<usize>>,
}

/// Why a set of steps and dependencies is not a DAG.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `step` depends on `dependency`, which is not a step.
    UnknownDependency { step: String, dependency: String },
    /// The names along a cycle, the first repeated at the end (`a -> b -> a`).
    Cycle(Vec<String>),
}

impl Dag {
    /// Builds the graph from `(name, dependencies)` pairs. Names are assumed unique.
    pub fn build<'a, I, D>(steps: I) -> Result<Dag, Error>
    where
        I: IntoIterator<Item = (&'a str, D)>,
        D: IntoIterator<Item = &'a str>,
    {
        let steps: Vec<(&str, Vec<&str>)> = steps
            .into_iter()
            .map(|(n, d)| (n, d.into_iter().collect()))
            .collect();
        let index: HashMap<&str, usize> = steps
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (*n, i))
            .collect();
        let mut parents = vec![Vec::new(); steps.len()];
        let mut children = vec![Vec::new(); steps.len()];
        for (i, (name, deps)) in steps.iter().enumerate() {
            for dep in deps {
                let Some(&p) = index.get(dep) else {
                    return Err(Error::UnknownDependency {
                        step: (*name).to_owned(),
                        dependency: (*dep).to_owned(),
                    });
                };
                if !parents[i].contains(&p) {
                    parents[i].push(p);
                    children[p].push(i);
                }
            }
        }
        let dag = Dag {
            names: steps.iter().map(|(n, _)| (*n).to_owned()).collect(),
            parents,
            children,
        };
        match dag.find_cycle() {
            Some(cycle) => Err(Error::Cycle(cycle)),
            None => Ok(dag),
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn name(&self, i: usize) -> &str {
        &self.names[i]
    }

    pub fn parents(&self, i: usize) -> &[usize] {
        &self.parents[i]
    }

    pub fn children(&self, i: usize) -> &[usize] {
        &self.children[i]
    }

    /// Steps with no parents: the ones a new task dispatches at once.
    pub fn roots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.len()).filter(|&i| self.parents[i].is_empty())
    }

    /// Every edge as `(parent, child)`.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        (0..self.len()).flat_map(move |c| self.parents[c].iter().map(move |&p| (p, c)))
    }

    /// Each step's depth: 0 for a root, else one more than its deepest parent. Steps of one
    /// depth can run at the same time; `tasker templates show` draws the graph by depth.
    pub fn depths(&self) -> Vec<usize> {
        let mut depth = vec![0; self.len()];
        let mut waiting: Vec<usize> = self.parents.iter().map(Vec::len).collect();
        let mut ready: Vec<usize> = self.roots().collect();
        while let Some(i) = ready.pop() {
            for &c in &self.children[i] {
                depth[c] = depth[c].max(depth[i] + 1);
                waiting[c] -= 1;
                if waiting[c] == 0 {
                    ready.push(c);
                }
            }
        }
        depth
    }

    /// A cycle through the dependency edges, if there is one, named child → parent order reversed
    /// so it reads in execution order: `a -> b -> a` means b depends on a and a depends on b.
    fn find_cycle(&self) -> Option<Vec<String>> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            New,
            OnStack,
            Done,
        }
        let mut mark = vec![Mark::New; self.len()];
        for start in 0..self.len() {
            if mark[start] != Mark::New {
                continue;
            }
            // Iterative DFS along child edges; `path` is the current stack of nodes.
            let mut path: Vec<(usize, usize)> = vec![(start, 0)];
            mark[start] = Mark::OnStack;
            while let Some(&mut (node, ref mut next)) = path.last_mut() {
                if let Some(&child) = self.children[node].get(*next) {
                    *next += 1;
                    match mark[child] {
                        Mark::New => {
                            mark[child] = Mark::OnStack;
                            path.push((child, 0));
                        }
                        Mark::OnStack => {
                            let from = path.iter().position(|&(n, _)| n == child)?;
                            let mut cycle: Vec<String> = path[from..]
                                .iter()
                                .map(|&(n, _)| self.names[n].clone())
                                .collect();
                            cycle.push(self.names[child].clone());
                            return Some(cycle);
                        }
                        Mark::Done => {}
                    }
                } else {
                    mark[node] = Mark::Done;
                    path.pop();
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(steps: &[(&'static str, &[&'static str])]) -> Result<Dag, Error> {
        Dag::build(steps.iter().map(|(n, d)| (*n, d.iter().copied())))
    }

    #[test]
    fn diamond_has_one_root_and_four_edges() {
        let dag = build(&[("a", &[]), ("b", &["a"]), ("c", &["a"]), ("d", &["b", "c"])]).unwrap();
        assert_eq!(dag.roots().collect::<Vec<_>>(), vec![0]);
        assert_eq!(dag.edges().count(), 4);
        assert_eq!(dag.parents(3), &[1, 2]);
        assert_eq!(dag.children(0), &[1, 2]);
    }

    #[test]
    fn depth_is_the_longest_path_from_a_root() {
        // e depends on a directly and on d, which is three steps down.
        let dag = build(&[
            ("a", &[]),
            ("b", &["a"]),
            ("c", &["b"]),
            ("d", &["c", "a"]),
            ("e", &["a", "d"]),
            ("lone", &[]),
        ])
        .unwrap();
        assert_eq!(dag.depths(), vec![0, 1, 2, 3, 4, 0]);
    }

    #[test]
    fn unknown_dependency_is_named() {
        let err = build(&[("a", &[]), ("b", &["nope"])]).unwrap_err();
        assert_eq!(
            err,
            Error::UnknownDependency {
                step: "b".into(),
                dependency: "nope".into()
            }
        );
    }

    #[test]
    fn cycle_is_named_in_order() {
        let err = build(&[
            ("root", &[]),
            ("a", &["root", "c"]),
            ("b", &["a"]),
            ("c", &["b"]),
        ])
        .unwrap_err();
        assert_eq!(
            err,
            Error::Cycle(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
    }

    #[test]
    fn self_dependency_is_a_cycle() {
        let err = build(&[("a", &["a"])]).unwrap_err();
        assert_eq!(err, Error::Cycle(vec!["a".into(), "a".into()]));
    }

    #[test]
    fn duplicate_dependency_counts_once() {
        let dag = build(&[("a", &[]), ("b", &["a", "a"])]).unwrap();
        assert_eq!(dag.parents(1), &[0]);
    }
}
