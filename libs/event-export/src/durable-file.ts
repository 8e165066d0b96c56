import { closeSync, copyFileSync, fdatasyncSync, fsyncSync, openSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

/** Writes `text` under a temporary name, puts it on disk, then gives it its name. */
export function writeDurably(file: string, text: string, mode = 0o666): void {
  const partial = `${file}.partial`;
  const fd = openSync(partial, 'w', mode);
  try {
    const bytes = Buffer.from(text);
    for (let written = 0; written < bytes.length;) written += writeSync(fd, bytes, written, bytes.length - written, written);
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(partial, file);
}

/** Puts a file's bytes on disk (before it is renamed into place). */
export function syncFile(file: string): void {
  const fd = openSync(file, 'r+');
  try {
    fdatasyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Copies `from` under a temporary name beside `to`, puts it on disk, then gives it its name. */
export function copyDurably(from: string, to: string): void {
  const partial = `${to}.partial`;
  copyFileSync(from, partial);
  syncFile(partial);
  renameSync(partial, to);
}

/** A rename is an entry of the directory: durable once the directory is synced. */
export function syncDirectoryOf(file: string): void {
  const fd = openSync(dirname(file), 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
