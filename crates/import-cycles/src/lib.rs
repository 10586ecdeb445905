//! Finds import cycles between the modules of a Rust crate.
//!
//! A crate's modules are read from its root file (`lib.rs`, `main.rs`, a bench's or a test's
//! file) by following `mod` items, as the compiler does (`#[path]` included, `#[cfg(test)]`
//! modules left out: tests may reach anywhere). Every path a module names that leads into the
//! crate (`crate::…`, `super::…`, `self::…`, a child module's name, or a name a `use` brought
//! in) is resolved to the deepest module it names, following explicit `pub use` re-exports to
//! where the item is defined, so `crate::Device` counts as a use of `device` when the crate
//! root re-exports it from there.
//!
//! A module and the modules inside it are one unit seen from outside: a parent may call its
//! children and they may use its types. So each reference is lifted to the two siblings that
//! hold its ends: `a::x` naming `b::y` is an edge from `a` to `b` (their common parent being
//! the crate root), and a reference between a module and its own ancestor or descendant makes
//! no edge. A cycle is a strongly connected component of more than one module among siblings:
//! `a` reaches `b` and `b` reaches `a`, at any depth of either.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::{Path, PathBuf};

use syn::spanned::Spanned;
use syn::visit::Visit;

/// Why a crate could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A source file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A source file is not valid Rust.
    #[error("{path}: {source}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message.
        source: syn::Error,
    },
    /// `cargo metadata` failed or printed something unexpected.
    #[error("cargo metadata: {0}")]
    Metadata(String),
}

/// A module's path inside its crate: `[]` is the root, `["sweep", "ranks"]` is `sweep::ranks`.
pub type ModulePath = Vec<String>;

fn display_module(path: &[String]) -> String {
    if path.is_empty() {
        "crate".to_owned()
    } else {
        path.join("::")
    }
}

/// Where one module names another: the first reference found, for the report.
#[derive(Debug, Clone)]
pub struct Reference {
    /// The file holding the reference.
    pub file: PathBuf,
    /// Its line (1-based).
    pub line: usize,
    /// The path as written, normalised to `crate::…`.
    pub path: String,
}

/// The modules of one crate and the edges between them.
#[derive(Debug, Default)]
pub struct ModuleGraph {
    modules: BTreeSet<ModulePath>,
    edges: BTreeMap<(ModulePath, ModulePath), Reference>,
}

/// One cycle: the modules in order (the first follows the last) and each step's reference.
#[derive(Debug)]
pub struct Cycle {
    /// The modules of the strongly connected component, in the order of one cycle through
    /// the first two.
    pub modules: Vec<ModulePath>,
    /// The reference behind each step `modules[i] -> modules[i + 1]` (the last wraps around).
    pub steps: Vec<Reference>,
    /// Every module of the strongly connected component, sorted.
    pub component: Vec<ModulePath>,
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.modules.iter().map(|m| display_module(m)).collect();
        write!(f, "{} -> {}", names.join(" -> "), names[0])?;
        if self.component.len() > self.modules.len() {
            let all: Vec<String> = self.component.iter().map(|m| display_module(m)).collect();
            write!(f, " (all in one cycle: {})", all.join(", "))?;
        }
        for step in &self.steps {
            write!(
                f,
                "\n    {}:{} names {}",
                step.file.display(),
                step.line,
                step.path
            )?;
        }
        Ok(())
    }
}

impl ModuleGraph {
    /// Reads the crate whose root file is `root` (its modules and the paths between them).
    pub fn read(root: &Path) -> Result<ModuleGraph, CheckError> {
        let mut modules = Vec::new();
        collect_file(root, Vec::new(), root_dir(root, true), &mut modules)?;
        let mut graph = ModuleGraph {
            modules: modules.iter().map(|m| m.path.clone()).collect(),
            edges: BTreeMap::new(),
        };
        let re_exports: BTreeMap<ModulePath, BTreeMap<String, ModulePath>> = modules
            .iter()
            .map(|m| (m.path.clone(), m.re_exports(&graph.modules)))
            .collect();
        for module in &modules {
            for (target, reference) in module.targets(&graph.modules, &re_exports) {
                if let Some(edge) = sibling_edge(&module.path, &target) {
                    graph.edges.entry(edge).or_insert(reference);
                }
            }
        }
        Ok(graph)
    }

    /// Every module found, root included.
    pub fn modules(&self) -> impl Iterator<Item = &ModulePath> {
        self.modules.iter()
    }

    /// Whether `from` names something of `to`.
    pub fn has_edge(&self, from: &[&str], to: &[&str]) -> bool {
        let key = (
            from.iter().map(|s| s.to_string()).collect(),
            to.iter().map(|s| s.to_string()).collect(),
        );
        self.edges.contains_key(&key)
    }

    /// The references between a crate's top-level modules that break `layers` (the crate's
    /// modules from the bottom layer up, each layer a list of modules): a module may use
    /// those of lower layers only. A top-level module in no layer is reported too.
    pub fn layer_violations(&self, layers: &[&[&str]]) -> Vec<String> {
        let rank = |module: &ModulePath| {
            layers
                .iter()
                .position(|layer| layer.contains(&module[0].as_str()))
        };
        let mut violations: Vec<String> = self
            .modules
            .iter()
            .filter(|m| m.len() == 1 && rank(m).is_none())
            .map(|m| format!("module {} is in no layer", display_module(m)))
            .collect();
        for ((from, to), reference) in &self.edges {
            if from.len() != 1 || to.len() != 1 {
                continue;
            }
            if let (Some(a), Some(b)) = (rank(from), rank(to)) {
                if a <= b {
                    violations.push(format!(
                        "{} uses {}, which is not below it: {}:{} names {}",
                        display_module(from),
                        display_module(to),
                        reference.file.display(),
                        reference.line,
                        reference.path
                    ));
                }
            }
        }
        violations
    }

    /// One cycle per strongly connected component of more than one module.
    pub fn cycles(&self) -> Vec<Cycle> {
        let nodes: Vec<&ModulePath> = self.modules.iter().collect();
        let index: BTreeMap<&ModulePath, usize> =
            nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
        let mut successors = vec![Vec::new(); nodes.len()];
        for (from, to) in self.edges.keys() {
            if let (Some(&a), Some(&b)) = (index.get(from), index.get(to)) {
                successors[a].push(b);
            }
        }
        strongly_connected(&successors)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| {
                let members: BTreeSet<usize> = component.iter().copied().collect();
                let start = component.iter().copied().min().unwrap_or(0);
                let order = cycle_through(start, &successors, &members);
                let modules: Vec<ModulePath> = order.iter().map(|&i| nodes[i].clone()).collect();
                let steps = (0..modules.len())
                    .filter_map(|i| {
                        let key = (modules[i].clone(), modules[(i + 1) % modules.len()].clone());
                        self.edges.get(&key).cloned()
                    })
                    .collect();
                let mut members: Vec<ModulePath> =
                    component.iter().map(|&i| nodes[i].clone()).collect();
                members.sort();
                Cycle {
                    modules,
                    steps,
                    component: members,
                }
            })
            .collect()
    }
}

/// The siblings holding the two ends of a reference from `from` to `to`: the children of their
/// deepest common ancestor that contain each; `None` where one contains the other.
fn sibling_edge(from: &[String], to: &[String]) -> Option<(ModulePath, ModulePath)> {
    let common = from.iter().zip(to).take_while(|(a, b)| a == b).count();
    if common == from.len() || common == to.len() {
        return None;
    }
    Some((from[..=common].to_vec(), to[..=common].to_vec()))
}

/// Tarjan's algorithm, iterative (a crate's module graph is small, but recursion depth should
/// not depend on input).
fn strongly_connected(successors: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let n = successors.len();
    let mut index = vec![usize::MAX; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next = 0;
    for root in 0..n {
        if index[root] != usize::MAX {
            continue;
        }
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (node, ref mut child)) = work.last_mut() {
            if *child == 0 {
                index[node] = next;
                low[node] = next;
                next += 1;
                stack.push(node);
                on_stack[node] = true;
            }
            if let Some(&succ) = successors[node].get(*child) {
                *child += 1;
                if index[succ] == usize::MAX {
                    work.push((succ, 0));
                } else if on_stack[succ] {
                    low[node] = low[node].min(index[succ]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// A shortest cycle from `start` back to itself inside one component (breadth first).
fn cycle_through(start: usize, successors: &[Vec<usize>], members: &BTreeSet<usize>) -> Vec<usize> {
    let mut previous: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &succ in &successors[node] {
            if !members.contains(&succ) {
                continue;
            }
            if succ == start {
                let mut path = vec![node];
                let mut at = node;
                while at != start {
                    at = previous[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = previous.entry(succ) {
                e.insert(node);
                queue.push_back(succ);
            }
        }
    }
    vec![start]
}

/// One `use` leaf: the local name it binds (or `*`) and the path it names, absolute in the
/// crate where it could be resolved.
#[derive(Debug, Clone)]
struct UseLeaf {
    local: String,
    path: Vec<String>,
    public: bool,
    line: usize,
}

/// One module's source: its items (an inline module's or a file's), where they came from.
struct ModuleSource {
    path: ModulePath,
    file: PathBuf,
    uses: Vec<UseLeaf>,
    /// Paths named outside `use` items, as written, with their lines.
    code_paths: Vec<(Vec<String>, usize)>,
    children: BTreeSet<String>,
}

/// Where the files of `file`'s child modules live: beside a crate root or a `mod.rs`, in a
/// folder named after the module otherwise.
fn root_dir(file: &Path, owns_dir: bool) -> PathBuf {
    let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
    if owns_dir {
        dir
    } else {
        let stem = file
            .file_stem()
            .map(|s| s.to_os_string())
            .unwrap_or_default();
        dir.join(stem)
    }
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .meta
                .require_list()
                .map(|list| list.tokens.to_string().trim() == "test")
                .unwrap_or(false)
    })
}

fn path_attr(attrs: &[syn::Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| {
        if !attr.path().is_ident("path") {
            return None;
        }
        let value = &attr.meta.require_name_value().ok()?.value;
        match value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        }
    })
}

fn collect_file(
    file: &Path,
    path: ModulePath,
    dir: PathBuf,
    out: &mut Vec<ModuleSource>,
) -> Result<(), CheckError> {
    let text = std::fs::read_to_string(file).map_err(|source| CheckError::Read {
        path: file.to_path_buf(),
        source,
    })?;
    let parsed = syn::parse_file(&text).map_err(|source| CheckError::Parse {
        path: file.to_path_buf(),
        source,
    })?;
    collect_items(&parsed.items, file, path, &dir, false, out)
}

/// Reads the module `path` made of `items` (a file's, or an inline module's when `inline`),
/// whose child modules' files are in `dir`.
fn collect_items(
    items: &[syn::Item],
    file: &Path,
    path: ModulePath,
    dir: &Path,
    inline: bool,
    out: &mut Vec<ModuleSource>,
) -> Result<(), CheckError> {
    let mut source = ModuleSource {
        path: path.clone(),
        file: file.to_path_buf(),
        uses: Vec::new(),
        code_paths: Vec::new(),
        children: BTreeSet::new(),
    };
    let mut children = Vec::new();
    for item in items {
        match item {
            syn::Item::Mod(module) => {
                if is_cfg_test(&module.attrs) {
                    continue;
                }
                let name = module.ident.to_string();
                source.children.insert(name.clone());
                let mut child_path = path.clone();
                child_path.push(name.clone());
                children.push((module, child_path));
            }
            syn::Item::Use(item_use) => {
                let public = !matches!(item_use.vis, syn::Visibility::Inherited);
                let line = item_use.span().start().line;
                flatten_use(&item_use.tree, Vec::new(), public, line, &mut source.uses);
            }
            other => {
                if !is_cfg_test(item_attrs(other)) {
                    let mut visitor = PathCollector::default();
                    visitor.visit_item(other);
                    source.code_paths.extend(visitor.paths);
                }
            }
        }
    }
    out.push(source);
    // A `#[path]` is relative to the file's folder, or inside an inline module to the folder
    // its module path names.
    let path_base = if inline {
        dir.to_path_buf()
    } else {
        file.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    for (module, child_path) in children {
        let name = module.ident.to_string();
        if let Some((_, content)) = &module.content {
            let child_dir = match path_attr(&module.attrs) {
                Some(p) => path_base.join(p),
                None => dir.join(&name),
            };
            collect_items(content, file, child_path, &child_dir, true, out)?;
        } else {
            let child_file = match path_attr(&module.attrs) {
                Some(p) => path_base.join(p),
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    if flat.exists() {
                        flat
                    } else {
                        dir.join(&name).join("mod.rs")
                    }
                }
            };
            let owns_dir = child_file.file_name().is_some_and(|f| f == "mod.rs");
            let child_dir = root_dir(&child_file, owns_dir);
            collect_file(&child_file, child_path, child_dir, out)?;
        }
    }
    Ok(())
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Union(i) => &i.attrs,
        _ => &[],
    }
}

fn flatten_use(
    tree: &syn::UseTree,
    prefix: Vec<String>,
    public: bool,
    line: usize,
    out: &mut Vec<UseLeaf>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            let mut next = prefix;
            next.push(p.ident.to_string());
            flatten_use(&p.tree, next, public, line, out);
        }
        syn::UseTree::Name(n) => {
            let name = n.ident.to_string();
            let mut path = prefix;
            let local = if name == "self" {
                path.last().cloned().unwrap_or_default()
            } else {
                path.push(name.clone());
                name
            };
            out.push(UseLeaf {
                local,
                path,
                public,
                line,
            });
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix;
            if r.ident != "self" {
                path.push(r.ident.to_string());
            }
            out.push(UseLeaf {
                local: r.rename.to_string(),
                path,
                public,
                line,
            });
        }
        syn::UseTree::Glob(_) => out.push(UseLeaf {
            local: "*".to_owned(),
            path: prefix,
            public,
            line,
        }),
        syn::UseTree::Group(g) => {
            for item in &g.items {
                flatten_use(item, prefix.clone(), public, line, out);
            }
        }
    }
}

/// Paths named in code (types, expressions, patterns, trait bounds), skipping nested modules
/// (read as modules of their own) and `#[cfg(test)]` items.
#[derive(Default)]
struct PathCollector {
    paths: Vec<(Vec<String>, usize)>,
}

impl PathCollector {
    /// Paths starting with `crate`, `super` or `self` inside a macro's or an attribute's tokens
    /// (`format!("{}", crate::x::y)`, `#[error("{}", crate::memory::Bytes(..))]`), which the
    /// parser leaves unparsed.
    fn scan_tokens(&mut self, tokens: proc_macro2::TokenStream) {
        use proc_macro2::{Spacing, TokenTree};
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        let mut i = 0;
        while i < trees.len() {
            match &trees[i] {
                TokenTree::Group(group) => self.scan_tokens(group.stream()),
                TokenTree::Ident(ident)
                    if ["crate", "super", "self"].contains(&ident.to_string().as_str()) =>
                {
                    let line = ident.span().start().line;
                    let mut segments = vec![ident.to_string()];
                    // `::` is a joint ':' then an alone ':'.
                    while let (
                        Some(TokenTree::Punct(a)),
                        Some(TokenTree::Punct(b)),
                        Some(TokenTree::Ident(next)),
                    ) = (trees.get(i + 1), trees.get(i + 2), trees.get(i + 3))
                    {
                        if a.as_char() != ':' || a.spacing() != Spacing::Joint || b.as_char() != ':'
                        {
                            break;
                        }
                        segments.push(next.to_string());
                        i += 3;
                    }
                    if segments.len() > 1 {
                        self.paths.push((segments, line));
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.segments.len() > 1 || path.leading_colon.is_none() {
            let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.paths.push((segments, path.span().start().line));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.scan_tokens(mac.tokens.clone());
        syn::visit::visit_macro(self, mac);
    }

    fn visit_attribute(&mut self, attr: &'ast syn::Attribute) {
        if let syn::Meta::List(list) = &attr.meta {
            self.scan_tokens(list.tokens.clone());
        }
    }

    fn visit_item_mod(&mut self, _: &'ast syn::ItemMod) {}

    fn visit_item_use(&mut self, _: &'ast syn::ItemUse) {}

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&item.attrs) {
            syn::visit::visit_impl_item_fn(self, item);
        }
    }
}

impl ModuleSource {
    /// Makes a path absolute in the crate (`crate` dropped), or `None` when it leaves the
    /// crate (another crate, a primitive, a generic parameter, a local binding).
    fn absolute(
        &self,
        segments: &[String],
        modules: &BTreeSet<ModulePath>,
        aliases: bool,
    ) -> Option<Vec<String>> {
        let first = segments.first()?;
        match first.as_str() {
            "crate" => Some(segments[1..].to_vec()),
            "self" => {
                let mut base = self.path.clone();
                base.extend_from_slice(&segments[1..]);
                Some(base)
            }
            "super" => {
                let mut base = self.path.clone();
                let mut rest = segments;
                while rest.first().is_some_and(|s| s == "super") {
                    base.pop()?;
                    rest = &rest[1..];
                }
                base.extend_from_slice(rest);
                Some(base)
            }
            name if self.children.contains(name) => {
                let mut base = self.path.clone();
                base.extend_from_slice(segments);
                let _ = modules;
                Some(base)
            }
            name if aliases => {
                let leaf = self.uses.iter().find(|u| u.local == name)?;
                let mut base = self.absolute(&leaf.path, modules, false)?;
                base.extend_from_slice(&segments[1..]);
                Some(base)
            }
            _ => None,
        }
    }

    /// The names this module re-exports by `pub use`, each with the absolute path it names.
    fn re_exports(&self, modules: &BTreeSet<ModulePath>) -> BTreeMap<String, ModulePath> {
        self.uses
            .iter()
            .filter(|u| u.public && u.local != "*")
            .filter_map(|u| Some((u.local.clone(), self.absolute(&u.path, modules, false)?)))
            .collect()
    }

    /// Every module this one names, with the first reference to each.
    fn targets(
        &self,
        modules: &BTreeSet<ModulePath>,
        re_exports: &BTreeMap<ModulePath, BTreeMap<String, ModulePath>>,
    ) -> Vec<(ModulePath, Reference)> {
        let mut found = Vec::new();
        for leaf in &self.uses {
            let Some(path) = self.absolute(&leaf.path, modules, false) else {
                continue;
            };
            let target = resolve(&path, modules, re_exports);
            let facade = leaf.public && target.starts_with(&self.path) && target != self.path;
            if !facade {
                found.push((target, self.reference(&path, leaf.line)));
            }
        }
        for (segments, line) in &self.code_paths {
            if let Some(path) = self.absolute(segments, modules, true) {
                found.push((
                    resolve(&path, modules, re_exports),
                    self.reference(&path, *line),
                ));
            }
        }
        found
    }

    fn reference(&self, path: &[String], line: usize) -> Reference {
        Reference {
            file: self.file.clone(),
            line,
            path: format!("crate::{}", path.join("::")),
        }
    }
}

/// The module an absolute path reaches: the deepest module prefix, then through explicit
/// re-exports of the next name to where it is defined.
fn resolve(
    path: &[String],
    modules: &BTreeSet<ModulePath>,
    re_exports: &BTreeMap<ModulePath, BTreeMap<String, ModulePath>>,
) -> ModulePath {
    let mut current = path.to_vec();
    for _ in 0..16 {
        let depth = (0..=current.len())
            .rev()
            .find(|&d| modules.contains(&current[..d].to_vec()))
            .unwrap_or(0);
        let module = current[..depth].to_vec();
        let Some(name) = current.get(depth) else {
            return module;
        };
        match re_exports.get(&module).and_then(|names| names.get(name)) {
            Some(target) if target != &current[..=depth] => {
                let mut next = target.clone();
                next.extend_from_slice(&current[depth + 1..]);
                current = next;
            }
            _ => return module,
        }
    }
    current
}

/// Every crate root of the workspace: each target (library, binaries, tests, benches,
/// examples) of each member, from `cargo metadata`.
pub fn workspace_roots(manifest: &Path) -> Result<Vec<(String, PathBuf)>, CheckError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--no-deps",
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(manifest)
        .output()
        .map_err(|e| CheckError::Metadata(e.to_string()))?;
    if !output.status.success() {
        return Err(CheckError::Metadata(
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ));
    }
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).map_err(|e| CheckError::Metadata(e.to_string()))?;
    let mut roots = Vec::new();
    for package in metadata["packages"].as_array().into_iter().flatten() {
        for target in package["targets"].as_array().into_iter().flatten() {
            let (Some(name), Some(src)) = (target["name"].as_str(), target["src_path"].as_str())
            else {
                continue;
            };
            let kind = target["kind"][0].as_str().unwrap_or("target");
            let package_name = package["name"].as_str().unwrap_or("?");
            roots.push((
                format!("{package_name} ({kind} {name})"),
                PathBuf::from(src),
            ));
        }
    }
    Ok(roots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn graph(files: &[(&str, &str)]) -> ModuleGraph {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), files);
        ModuleGraph::read(&dir.path().join("lib.rs")).unwrap()
    }

    #[test]
    fn a_cycle_between_siblings_is_found_with_its_references() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::Thing;\npub struct Other;\n"),
            ("b.rs", "pub struct Thing;\npub fn f() -> String { format!(\"{:?}\",\n super::a::Other) }\n"),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        let text = cycles[0].to_string();
        assert!(text.starts_with("a -> b -> a"), "{text}");
        assert!(text.contains("a.rs:1 names crate::b::Thing"), "{text}");
        assert!(text.contains("b.rs:3 names crate::a::Other"), "{text}");
    }

    #[test]
    fn a_longer_cycle_through_nested_folders_and_re_exports_is_found() {
        // c reaches a only through the root's re-export of `a::Hub`.
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;\npub use a::Hub;\n"),
            ("a/mod.rs", "mod inner;\npub struct Hub(inner::Part);\n"),
            ("a/inner.rs", "pub struct Part(crate::b::Leaf);\n"),
            ("b.rs", "pub struct Leaf(crate::c::d::Twig);\n"),
            ("c/mod.rs", "pub mod d;\n"),
            ("c/d.rs", "pub struct Twig;\nfn f(_: crate::Hub) {}\n"),
        ]);
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert_eq!(cycles[0].component.len(), 3, "{}", cycles[0]);
        assert!(
            cycles[0].to_string().contains("c/d.rs:2 names crate::Hub"),
            "{}",
            cycles[0]
        );
    }

    #[test]
    fn a_facade_and_children_using_their_parent_make_no_cycle() {
        let g = graph(&[
            ("lib.rs", "pub mod data;\npub use data::{read, Table};\n"),
            (
                "data/mod.rs",
                "mod csv;\npub use csv::read;\npub struct Table;\n",
            ),
            (
                "data/csv.rs",
                "use super::Table;\npub fn read() -> Table { Table }\n",
            ),
            ("later.rs", "this file is not a module and is never read"),
        ]);
        assert!(g.cycles().is_empty(), "{:?}", g.cycles());
        assert!(!g.has_edge(&["data", "csv"], &["data"]));
        assert!(!g.has_edge(&[], &["data"]));
    }

    #[test]
    fn a_parent_and_its_child_using_each_other_are_one_unit() {
        let g = graph(&[
            ("lib.rs", "mod job;\n"),
            (
                "job/mod.rs",
                "mod step;\npub struct Options;\nfn run() { step::go(); }\n",
            ),
            ("job/step.rs", "pub fn go() { let _ = super::Options; }\n"),
        ]);
        assert!(g.cycles().is_empty(), "{:?}", g.cycles());
    }

    #[test]
    fn references_between_nested_modules_lift_to_their_top_siblings() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a/mod.rs", "mod x;\n"),
            ("a/x.rs", "fn f(_: crate::b::y::Y) {}\n"),
            ("b/mod.rs", "pub mod y;\nfn g(_: super::a::A) {}\n"),
            ("b/y.rs", "pub struct Y;\n"),
        ]);
        assert!(g.has_edge(&["a"], &["b"]));
        assert!(!g.has_edge(&["a", "x"], &["b", "y"]));
        let cycles = g.cycles();
        assert_eq!(cycles.len(), 1, "{cycles:?}");
        assert!(
            cycles[0].to_string().starts_with("a -> b -> a"),
            "{}",
            cycles[0]
        );
    }

    #[test]
    fn a_path_attribute_is_relative_to_its_files_folder() {
        let g = graph(&[
            ("lib.rs", "mod a;\n"),
            ("a.rs", "#[path = \"shared/helpers.rs\"]\nmod helpers;\n"),
            ("shared/helpers.rs", "pub fn h() {}\n"),
        ]);
        assert!(
            g.modules().any(|m| m == &["a", "helpers"]),
            "{:?}",
            g.modules().collect::<Vec<_>>()
        );
    }

    #[test]
    fn test_modules_and_other_crates_make_no_edges() {
        let g = graph(&[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "pub fn f() { let _ = std::mem::size_of::<u8>(); }\n#[cfg(test)]\nmod tests { use crate::b::g; }\n"),
            ("b.rs", "use crate::a::f;\npub fn g() { f() }\n"),
        ]);
        assert!(g.cycles().is_empty(), "{:?}", g.cycles());
    }

    #[test]
    fn a_module_that_uses_a_layer_above_it_is_reported() {
        let g = graph(&[
            ("lib.rs", "mod base;\nmod jobs;\nmod extra;\n"),
            ("base.rs", "pub struct B;\nfn f(_: crate::jobs::J) {}\n"),
            ("jobs.rs", "pub struct J(crate::base::B);\n"),
            ("extra.rs", ""),
        ]);
        let violations = g.layer_violations(&[&["base"], &["jobs"]]);
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(violations
            .iter()
            .any(|v| v == "module extra is in no layer"));
        assert!(violations
            .iter()
            .any(|v| v.starts_with("base uses jobs, which is not below it")));
        assert!(
            g.layer_violations(&[&["base"], &["jobs"], &["extra"]])
                .len()
                == 1
        );
    }

    /// The runtime's layers, from the bottom up (`docs/design.md` names them): each uses only
    /// those below it.
    #[test]
    fn the_runtime_uses_only_the_layers_below_each_layer() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reservoir-runtime/src/lib.rs");
        let graph = ModuleGraph::read(&root).unwrap();
        let layers: &[&[&str]] = &[
            &["error"],
            &["files", "memory"],
            &["device"],
            &["config"],
            &["data"],
            &["model"],
            &["jobs"],
        ];
        let violations = graph.layer_violations(layers);
        assert!(violations.is_empty(), "{}", violations.join("\n"));
    }

    /// Every crate of this workspace: no module imports, directly or through others, a module
    /// that imports it.
    #[test]
    fn the_workspace_has_no_import_cycles() {
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
        let roots = workspace_roots(&manifest).unwrap();
        assert!(roots.len() > 10, "cargo metadata listed only {roots:?}");
        let mut failures = Vec::new();
        for (name, root) in roots {
            let graph = ModuleGraph::read(&root).unwrap_or_else(|e| panic!("{name}: {e}"));
            for cycle in graph.cycles() {
                failures.push(format!("{name}: {cycle}"));
            }
        }
        assert!(
            failures.is_empty(),
            "import cycles:\n{}",
            failures.join("\n")
        );
    }
}
