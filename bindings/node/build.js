'use strict';
// build.js - `npm install`'s build of the addon: compiles src/*.c into
// build/rlstore.node with the C compiler against node's own headers and
// links it to librlstore.  No node-gyp, nothing downloaded.
//
// Where librlstore is found, first match:
//   RLSTORE_INCLUDE and RLSTORE_LIBDIR   the folders of rlstore.h and
//                                        librlstore.so
//   pkg-config rlstore                   an installed library (make install)
//   ../../include and ../../build        the source tree, after `make`
// NODE_INCLUDE: node's headers (default: beside the node binary).  CC: the
// compiler (default cc).  The library's folder is written as the addon's
// rpath, so it loads without LD_LIBRARY_PATH.
const { execFileSync } = require('child_process');
const fs = require('fs');
const path = require('path');

function pkgConfig(args) {
  try {
    return execFileSync('pkg-config', args.concat(['rlstore']), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return null;
  }
}

function findLibrary() {
  const env = process.env;
  if (env.RLSTORE_INCLUDE || env.RLSTORE_LIBDIR) {
    return { include: env.RLSTORE_INCLUDE || '', libdir: env.RLSTORE_LIBDIR || '', from: 'RLSTORE_INCLUDE/RLSTORE_LIBDIR' };
  }
  const inc = pkgConfig(['--variable=includedir']);
  const lib = pkgConfig(['--variable=libdir']);
  if (inc && lib) return { include: inc, libdir: lib, from: 'pkg-config rlstore' };
  const tree = path.resolve(__dirname, '..', '..');
  const build = path.join(tree, env.RLSTORE_BUILD || 'build');
  if (fs.existsSync(path.join(tree, 'include', 'rlstore.h')) && fs.existsSync(path.join(build, 'librlstore.so'))) {
    return { include: path.join(tree, 'include'), libdir: build, from: 'the source tree' };
  }
  return null;
}

function main() {
  const lib = findLibrary();
  if (!lib) {
    console.error('rlstore: cannot find librlstore: install it (make install in the rlstore tree) or set ' +
      'RLSTORE_INCLUDE and RLSTORE_LIBDIR');
    return 1;
  }
  const nodeInclude = process.env.NODE_INCLUDE || path.resolve(process.execPath, '..', '..', 'include', 'node');
  if (!fs.existsSync(path.join(nodeInclude, 'node_api.h'))) {
    console.error(`rlstore: node's headers are not in ${nodeInclude} (set NODE_INCLUDE)`);
    return 1;
  }
  const src = path.join(__dirname, 'src');
  const sources = fs.readdirSync(src).filter((f) => f.endsWith('.c')).sort().map((f) => path.join(src, f));
  const out = path.join(__dirname, 'build', 'rlstore.node');
  fs.mkdirSync(path.dirname(out), { recursive: true });
  const args = ['-std=c11', '-D_POSIX_C_SOURCE=200809L', '-D_DEFAULT_SOURCE', '-O2', '-fPIC', '-shared',
    '-Wall', '-Wextra', '-Wno-unused-parameter'];
  if (lib.include) args.push('-I', lib.include);
  args.push('-isystem', nodeInclude, ...sources, '-o', out);
  if (lib.libdir) args.push('-L', lib.libdir, '-Wl,-rpath,' + lib.libdir);
  args.push('-lrlstore', '-lpthread');
  const cc = process.env.CC || 'cc';
  console.log(`rlstore: building the addon with librlstore from ${lib.from}`);
  try {
    execFileSync(cc, args, { stdio: 'inherit' });
  } catch (err) {
    console.error(`rlstore: ${cc} failed to build the addon (${err.message})`);
    return 1;
  }
  return 0;
}

process.exitCode = main();
