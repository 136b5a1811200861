import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { type Dockerfile, execForm, keyValues, readDockerfile, type Stage, substitute } from "./dockerfile.ts";
import { repoRoot } from "./processes.ts";

/**
 * Loom's image (infra/docker/Dockerfile) re-enacted on this machine, which
 * has no container engine: a root file system of its own, built from the
 * Dockerfile's instructions, in which the image's CMD runs as the image's
 * USER with the image's ENV, WORKDIR and paths (/app, /data).
 *
 * What is real: the sources the workspace stage COPYs (the files git tracks,
 * as the build context has them after .dockerignore), the prod-deps stage's
 * `pnpm install` (against this machine's pnpm store instead of the build
 * cache), every instruction of the runtime stage in order (RUN as root inside
 * the root file system), and the CMD, run by `sh` as uid/gid of USER with no
 * other groups, in /app owned by root. What stands in: the base image is this
 * machine's /usr, /etc and /lib (read-only) with this Node.js 24 at
 * /usr/local, as the node image has it; the build stage's generated protobuf
 * code is this checkout's (what `pnpm install` made here, as it does there).
 * Needs root (chroot, mount namespaces): `canReenactImage()` says why not.
 */
export const dockerfilePath = join(repoRoot, "infra/docker/Dockerfile");

/** The base image's own PATH (node:24-slim). */
const basePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

export function canReenactImage(): string | undefined {
  if (process.getuid?.() !== 0) return "re-enacting the image needs root (chroot, a mount namespace, a user switch)";
  for (const tool of ["unshare", "chroot", "setpriv"]) {
    if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0)
      return `re-enacting the image needs ${tool} (util-linux / coreutils)`;
  }
  return undefined;
}

export interface ReenactedImage {
  /** The image's root file system (its /app, /data… are under it). */
  root: string;
  /** ENV of the runtime stage, ARGs resolved. */
  env: Record<string, string>;
  /** USER of the runtime stage, as `uid:gid`. */
  user: string;
  workdir: string;
  volumes: string[];
  cmd: string[];
  /** Starts the CMD as the image does; `env` adds to the image's (as `docker run -e`). */
  run(env?: Record<string, string>): ChildProcess;
  /** Removes the root file system (after checking nothing is mounted in it). */
  remove(): void;
}

export function reenactImage(options: { buildArgs?: Record<string, string> } = {}): ReenactedImage {
  const dockerfile = readDockerfile(dockerfilePath);
  const work = mkdtempSync(join(tmpdir(), "loom-image-"));
  chmodSync(work, 0o755);
  const stages = new Map<string, StageState>();
  try {
    for (const stage of dockerfile.stages) {
      if (stage.name === "workspace" || stage.name === "prod-deps")
        stages.set(stage.name, buildStage(stage, work, stages));
    }
    const stageRoots = new Map([...stages].map(([name, state]) => [name, state.root]));
    // The build stage's one product the runtime takes: the generated code, as `pnpm install` made it here.
    stageRoots.set("build", repoRoot);
    const runtime = dockerfile.stages.at(-1)!;
    return runtimeStage(runtime, dockerfile, join(work, "rootfs"), stageRoots, options.buildArgs ?? {}, work);
  } catch (error) {
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

interface StageState {
  /** The stage's file system: its /app is app/ under it. */
  root: string;
  env: Record<string, string>;
  workdir: string;
}

/** The workspace stage (its COPYs from the build context) and prod-deps (its install), each in a directory of its own, on top of the stage it starts from. */
function buildStage(stage: Stage, work: string, stages: Map<string, StageState>): StageState {
  const root = join(work, stage.name);
  const parent = stages.get(stage.from);
  if (parent) copyTree(parent.root, root);
  else mkdirSync(root, { recursive: true });
  let env = { ...parent?.env };
  let workdir = parent?.workdir ?? "/";
  for (const { keyword, args } of stage.instructions) {
    if (keyword === "ENV") env = { ...env, ...keyValues(args, env) };
    else if (keyword === "WORKDIR")
      mkdirSync(join(root, (workdir = posix.resolve(workdir, substitute(args, env)))), { recursive: true });
    else if (keyword === "COPY") copyFromContext(args, join(root, workdir));
    else if (keyword === "RUN" && stage.name === "prod-deps") runInstall(args, join(root, workdir), env);
    // The workspace stage's RUNs install pnpm (this machine's, the pinned version, runs instead) and fill the build cache (this machine's store stands in).
  }
  return { root, env, workdir };
}

/** COPY of the build context: the files git tracks (what .dockerignore leaves), each to the same path under the stage's WORKDIR. */
function copyFromContext(args: string, dest: string): void {
  const parts = args.split(" ").filter((part) => !part.startsWith("--"));
  const target = parts.pop()!;
  for (const source of parts) {
    // Loom's COPYs keep paths (`a b ./`, `proto/ proto/`): other shapes are not re-enacted.
    if (!(target === "./" || target.replace(/\/$/, "") === source.replace(/\/$/, "")))
      throw new Error(`COPY ${args}: only path-keeping COPYs are re-enacted`);
  }
  const files = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ...parts], {
    cwd: repoRoot,
    encoding: "utf8",
  });
  if (files.status !== 0) throw new Error(`git ls-files: ${files.stderr}`);
  mkdirSync(dest, { recursive: true });
  const tar = spawnSync("sh", ["-c", 'xargs -0 tar -cf - | tar -xf - -C "$1"', "sh", dest], {
    cwd: repoRoot,
    input: files.stdout,
  });
  if (tar.status !== 0) throw new Error(`copying ${parts.join(" ")}: ${tar.stderr}`);
}

/** The prod-deps stage's RUN: its pnpm install, the cache mount's store replaced by this machine's. */
function runInstall(args: string, cwd: string, env: Record<string, string>): void {
  const store = spawnSync("pnpm", ["store", "path"], { encoding: "utf8" })
    .stdout.trim()
    .replace(/\/v\d+$/, "");
  const command = args.replace(/--mount=\S+\s*/g, "").replaceAll("/pnpm/store", store);
  const run = spawnSync("sh", ["-c", command], { cwd, env: { ...env, PATH: process.env.PATH }, encoding: "utf8" });
  if (run.status !== 0) throw new Error(`RUN ${command}: ${run.stdout}${run.stderr}`);
}

function runtimeStage(
  stage: Stage,
  dockerfile: Dockerfile,
  root: string,
  stageRoots: Map<string, string>,
  buildArgs: Record<string, string>,
  work: string,
): ReenactedImage {
  for (const dir of ["tmp", "proc", "dev", "sys", "usr", "etc", "home/node"])
    mkdirSync(join(root, dir), { recursive: true });
  chmodSync(join(root, "tmp"), 0o1777);
  spawnSync("chown", ["1000:1000", join(root, "home/node")]);
  // Merged /usr: /bin, /lib… are links into it, as on Debian.
  for (const link of ["bin", "sbin", "lib", "lib64"]) {
    if (existsSync(`/${link}`) && lstatSync(`/${link}`).isSymbolicLink())
      symlinkSync(readlinkSync(`/${link}`), join(root, link));
  }
  // ARGs: for substitution while building; ENV: what the image's processes get.
  const args: Record<string, string> = {};
  let env: Record<string, string> = { PATH: basePath };
  const known = () => ({ ...args, ...env });
  let workdir = "/";
  let user = "0:0";
  let cmd: string[] = [];
  const volumes: string[] = [];
  for (const { keyword, args: text } of stage.instructions) {
    switch (keyword) {
      case "ENV":
        env = { ...env, ...keyValues(text, known()) };
        break;
      case "ARG":
        for (const [name, value] of Object.entries(keyValues(text, known())))
          args[name] = buildArgs[name] ?? (value || dockerfile.args[name] || "");
        break;
      case "WORKDIR":
        workdir = posix.resolve(workdir, substitute(text, known()));
        mkdirSync(join(root, workdir), { recursive: true });
        break;
      case "COPY": {
        const from = /--from=(\S+)/.exec(text)?.[1];
        const [source, target] = text.split(" ").filter((part) => !part.startsWith("--"));
        if (!from || !stageRoots.has(from) || !source || !target)
          throw new Error(`COPY ${text}: only COPY --from=<stage> <dir> <dir> is re-enacted here`);
        const sourceRoot =
          from === "build"
            ? join(stageRoots.get(from)!, posix.relative("/app", source))
            : join(stageRoots.get(from)!, source);
        copyTree(sourceRoot, join(root, posix.resolve(workdir, target)));
        break;
      }
      case "RUN":
        inRoot(root, shell(text), { env: known(), workdir, user: "0:0" }, "inherit-sync");
        break;
      case "USER":
        user = substitute(text, known());
        break;
      case "VOLUME":
        volumes.push(...(text.startsWith("[") ? execForm(text) : text.split(" ")));
        break;
      case "CMD":
        cmd = text.startsWith("[") ? execForm(text) : shell(text);
        break;
      case "EXPOSE":
        break;
      default:
        throw new Error(`${keyword} ${text}: not re-enacted (add it to packages/testing/src/image.ts)`);
    }
  }
  const imageEnv = env;
  return {
    root,
    env: imageEnv,
    user,
    workdir,
    volumes,
    cmd,
    run: (extra = {}) =>
      inRoot(root, cmd, { env: { HOME: "/home/node", ...imageEnv, ...extra }, workdir, user }, "spawn") as ChildProcess,
    remove: () => {
      const mounted = readFileSync("/proc/self/mountinfo", "utf8")
        .split("\n")
        .filter((line) => line.split(" ")[4]?.startsWith(root));
      if (mounted.length > 0)
        throw new Error(`not removing ${work}: mounts under it in this namespace:\n${mounted.join("\n")}`);
      rmSync(work, { recursive: true, force: true });
    },
  };
}

function shell(command: string): string[] {
  return ["/bin/sh", "-c", command];
}

/**
 * Runs `command` chrooted into `root`, in a mount namespace of its own (which
 * ends with the process, taking its mounts along: nothing shows outside), as
 * `user` (uid:gid, no other groups), with only `env`, in `workdir`.
 */
function inRoot(
  root: string,
  command: string[],
  options: { env: Record<string, string>; workdir: string; user: string },
  how: "spawn" | "inherit-sync",
): ChildProcess | undefined {
  const node = dirname(dirname(process.execPath));
  const [uid, gid = uid] = options.user.split(":");
  const setup = [
    "set -e",
    "r=$1; node=$2; uid=$3; gid=$4; workdir=$5; shift 5",
    'for d in usr etc; do mount --bind "/$d" "$r/$d"; mount -o remount,bind,ro "$r/$d"; done',
    'mount --bind "$node" "$r/usr/local"',
    'mount --rbind /dev "$r/dev"; mount --bind /proc "$r/proc"; mount --rbind /sys "$r/sys"',
    'if [ "$uid" = 0 ]; then exec chroot "$r" env -C "$workdir" "$@"; fi',
    'exec chroot "$r" setpriv --reuid="$uid" --regid="$gid" --clear-groups env -C "$workdir" "$@"',
  ].join("\n");
  const envArgs = ["-i", ...Object.entries(options.env).map(([k, v]) => `${k}=${v}`)];
  const args = [
    "--mount",
    "--propagation",
    "private",
    "--",
    "sh",
    "-c",
    setup,
    "sh",
    root,
    node,
    uid!,
    gid!,
    options.workdir,
    "env",
    ...envArgs,
    ...command,
  ];
  if (how === "spawn") return spawn("unshare", args, { stdio: ["ignore", "pipe", "pipe"] });
  const run = spawnSync("unshare", args, { encoding: "utf8" });
  if (run.status !== 0)
    throw new Error(`RUN ${command.join(" ")} in the image: exit ${run.status}: ${run.stdout}${run.stderr}`);
}

/** `cp -a` of a directory's contents (links, modes and owners as they are, as COPY keeps modes). */
function copyTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  const copy = spawnSync("cp", ["-a", `${from}/.`, to], { encoding: "utf8" });
  if (copy.status !== 0) throw new Error(`cp -a ${from} ${to}: ${copy.stderr}`);
}
