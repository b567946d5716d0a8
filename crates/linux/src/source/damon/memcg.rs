//! The memory cgroup a DAMOS `memcg` filter names: a cgroup2 directory, given relative to
//! the cgroup2 mount (`/sys/fs/cgroup` on most systems), checked before anything is
//! written. The kernel looks the filter's `memcg_path` up among the memory cgroups by
//! their path below the cgroup2 root (`/a/b`) when the kdamond is turned on or
//! committed, and refuses the whole setup (`EINVAL`) when none has it; a cgroup whose
//! parent does not enable the memory controller has no memory cgroup (and no
//! `memory.current` file).

use std::path::{Component, Path, PathBuf};

use procfs_core::process::MountInfos;
use procfs_core::FromBufRead;

use super::sysfs::DamonError;
use crate::sysfs_io;

/// Where the mounts are listed, relative to the root directory.
const MOUNTS: &str = "proc/self/mountinfo";

/// The cgroup2 mount point under `root`, from the mount table (parsed by procfs-core).
pub fn cgroup2_mount(root: &Path) -> Result<PathBuf, DamonError> {
    let mounts = root.join(MOUNTS);
    let text = sysfs_io::read_raw(&mounts)?;
    let table = MountInfos::from_buf_read(text.as_bytes())
        .map_err(|e| bad("", format!("cannot parse {}: {e}", mounts.display())))?;
    match table.iter().find(|m| m.fs_type == "cgroup2") {
        Some(m) => Ok(root.join(m.mount_point.strip_prefix("/").unwrap_or(&m.mount_point))),
        None => Err(bad("", format!("no cgroup2 file system is mounted ({} lists none)", mounts.display()))),
    }
}

/// The kernel's name (`/a/b`) of the memory cgroup at `path` (`a/b` or `/a/b`, relative
/// to the cgroup2 mount), after checking that it exists and is a memory cgroup.
pub fn kernel_path(root: &Path, path: &str) -> Result<String, DamonError> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let plain = Path::new(path.trim_start_matches('/')).components().all(|c| matches!(c, Component::Normal(_)));
    if parts.is_empty() || !plain {
        return Err(bad(path, "expected a cgroup below the cgroup2 root, like tierkit/app".to_string()));
    }
    let dir = cgroup2_mount(root)?.join(parts.join("/"));
    if !dir.is_dir() {
        return Err(bad(path, format!("{} does not exist", dir.display())));
    }
    if !dir.join("memory.current").exists() {
        return Err(bad(
            path,
            format!(
                "it is not a memory cgroup ({} is missing): enable the memory controller in its parent's \
                 cgroup.subtree_control (+memory)",
                dir.join("memory.current").display()
            ),
        ));
    }
    Ok(format!("/{}", parts.join("/")))
}

fn bad(path: &str, why: String) -> DamonError {
    DamonError::InvalidOptions(format!("memory cgroup {path:?}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    // Lines of /proc/self/mountinfo as a Debian 12 host has them.
    const PROC_LINE: &str = "22 28 0:20 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw";
    const CGROUP2_LINE: &str =
        "24 28 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate";

    fn tree(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("tierkit-memcg-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("proc/self")).unwrap();
        fs::write(root.join(MOUNTS), format!("{PROC_LINE}\n{CGROUP2_LINE}\n")).unwrap();
        fs::create_dir_all(root.join("sys/fs/cgroup/tk/app")).unwrap();
        fs::write(root.join("sys/fs/cgroup/tk/app/memory.current"), "0\n").unwrap();
        fs::create_dir_all(root.join("sys/fs/cgroup/nomem")).unwrap();
        root
    }

    #[test]
    fn a_memory_cgroup_gets_the_kernels_name_for_it() {
        let root = tree("ok");
        assert_eq!(kernel_path(&root, "tk/app").unwrap(), "/tk/app");
        assert_eq!(kernel_path(&root, "/tk/app/").unwrap(), "/tk/app");
        fs::remove_dir_all(root).unwrap();
    }

    #[test]
    fn missing_cgroups_non_memory_cgroups_and_bad_paths_are_named() {
        let root = tree("bad");
        let err = kernel_path(&root, "nope").unwrap_err().to_string();
        assert!(err.contains("\"nope\"") && err.contains("does not exist"), "{err}");
        let err = kernel_path(&root, "nomem").unwrap_err().to_string();
        assert!(err.contains("\"nomem\"") && err.contains("+memory"), "{err}");
        for path in ["", "/", "tk/../etc", "./tk"] {
            let err = kernel_path(&root, path).unwrap_err().to_string();
            assert!(err.contains("below the cgroup2 root"), "{path}: {err}");
        }
        fs::write(root.join(MOUNTS), format!("{PROC_LINE}\n")).unwrap();
        let err = kernel_path(&root, "tk/app").unwrap_err().to_string();
        assert!(err.contains("no cgroup2 file system is mounted"), "{err}");
        fs::remove_dir_all(root).unwrap();
    }
}
