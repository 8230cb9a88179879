# File operations confined to a home, run inside the computer as its user with
# `perl -e <this> -- <home> <op> <home-relative path> [args]` (handed over at every run rather than
# baked into an image, so computers made from older images, and vendors' sandboxes, get it too:
# the supervisor's Docker computers with home /home/cubicle, E2B sandboxes with theirs). Nothing here trusts a path twice: every component is opened with
# O_NOFOLLOW relative to the folder opened before it (`/proc/self/fd/<fd>/<name>` is openat), and a
# symlink met on the way is read and resolved here, against the folders already open, and refused
# unless it stays in the home. A program in the computer swapping a folder for a symlink meanwhile
# therefore never moves an operation outside the home.
#
# `sweep` removes upload temporaries left by writers that died (see sweep_uploads).
# `untar` is the exception: it makes a folder and extracts the tar on stdin into it, saying nothing.
# Otherwise the first stdout line is a verdict (ok, file <size>, outside, missing, notdir, notfile, toolarge);
# `write` ends with a second one: done, or nospace when the disk (or the user's quota) is full;
# what follows is NUL-separated fields, or a file's bytes.
use strict;
use warnings;
use Fcntl qw(O_RDONLY O_WRONLY O_CREAT O_EXCL O_NOFOLLOW O_DIRECTORY O_NONBLOCK S_ISDIR S_ISREG S_ISLNK :flock);
use POSIX qw(EEXIST ELOOP ENOENT ENOTDIR EISDIR ENOSPC EDQUOT);

my $MAX_LINKS = 40;
# an upload's temporary file, beside its target until it is renamed over it
my $UPLOAD_TEMP = qr/^\.cubicle-upload-[0-9a-f]{16}$/;
my $MAX_SWEEP_DEPTH = 256;
my ($HOME, $op, $rel, @args) = @ARGV;
die "the home must be an absolute path\n" unless defined $HOME && $HOME =~ m{^/.+[^/]$};
binmode STDOUT;
binmode STDIN;

sub verdict { print "$_[0]\n"; exit 0 }
sub at { '/proc/self/fd/' . fileno($_[0]) . "/$_[1]" }

# An upload that cannot be written: its temporary file goes. A full disk is the caller's to hear
# about by name, after the rest of the body is read, so the writer is not cut off mid-send.
sub write_failed {
  my ($parent, $temp) = @_;
  my $why = $!;
  unlink at($parent, $temp);
  if ($why == ENOSPC || $why == EDQUOT) {
    1 while read(STDIN, my $skip, 65536);
    verdict('nospace');
  }
  die "write failed: $why\n";
}

sub open_dir {
  my ($path) = @_;
  sysopen(my $dir, $path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW) or return;
  return $dir;
}

# Walks `$rel` from the home. Returns the open folder holding the last component and that
# component's name (undef when the path is a folder itself, e.g. the home), with every symlink on
# the way resolved inside the home. `$follow_last` resolves a symlink in the last place too;
# `$create` makes missing folders on the way.
sub walk {
  my ($path, $follow_last, $create) = @_;
  my $home = open_dir($HOME) or die "cannot open the home: $!\n";
  my @stack = ([$home, '']);
  my @todo = grep { $_ ne '' && $_ ne '.' } split m{/}, $path;
  my $links = 0;
  my $expand = sub {
    my ($target) = @_;
    verdict('outside') if ++$links > $MAX_LINKS || !defined $target;
    if ($target =~ m{^/}) {
      verdict('outside') unless $target =~ s{^\Q$HOME\E(/|$)}{};
      splice @stack, 1;
    }
    unshift @todo, grep { $_ ne '' && $_ ne '.' } split m{/}, $target;
  };
  while (@todo) {
    my $name = shift @todo;
    if ($name eq '..') {
      verdict('outside') if @stack == 1;
      pop @stack;
      next;
    }
    my $parent = $stack[-1][0];
    my $p = at($parent, $name);
    if (!@todo) {
      my @st = lstat $p;
      if (@st && S_ISLNK($st[2]) && $follow_last) {
        $expand->(readlink $p);
        next;
      }
      return ($parent, $name, join('/', (map { $_->[1] } @stack[1 .. $#stack]), $name));
    }
    if (my $dir = open_dir($p)) {
      push @stack, [$dir, $name];
      next;
    }
    if ($! == ENOENT && $create) {
      mkdir $p, 0755 or $! == EEXIST or verdict('notdir');
      unshift @todo, $name;
      verdict('outside') if ++$links > $MAX_LINKS;
      next;
    }
    verdict('missing') if $! == ENOENT;
    verdict('notdir') unless $! == ELOOP || $! == ENOTDIR;
    my $target = readlink $p;
    verdict('notdir') if !defined $target && $! != ENOENT;
    if (defined $target) { $expand->($target) } else { unshift @todo, $name; ++$links }
  }
  return ($stack[-1][0], undef, join('/', map { $_->[1] } @stack[1 .. $#stack]));
}

sub list_dir {
  my ($dir) = @_;
  opendir(my $names, '/proc/self/fd/' . fileno($dir)) or verdict('missing');
  print "ok\n";
  for my $name (readdir $names) {
    next if $name eq '.' || $name eq '..';
    my @st = lstat at($dir, $name) or next;
    my $kind = S_ISLNK($st[2]) ? 'l' : S_ISDIR($st[2]) ? 'd' : 'f';
    printf "%s\0%s\0%d\0%o\0%d\0", $name, $kind, $st[7], $st[2] & 07777, $st[9];
  }
}

# Opens the walked path's last component without following it (it was resolved already).
sub open_last {
  my ($parent, $name) = @_;
  return ($parent) unless defined $name;
  my $fh;
  return ($fh) if sysopen($fh, at($parent, $name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  verdict('missing') if $! == ENOENT;
  # swapped for a symlink after the walk looked: where it leads now was never checked
  verdict('outside') if $! == ELOOP;
  verdict('notfile');
}

sub stream_file {
  my ($fh, $size) = @_;
  print "file $size\n";
  my $left = $size;
  while ($left > 0) {
    my $got = sysread($fh, my $buffer, $left < 65536 ? $left : 65536);
    die "read failed: $!\n" unless defined $got;
    die "the file shrank while it was read\n" if $got == 0;
    print $buffer;
    $left -= $got;
  }
}

sub remove_tree {
  my ($parent, $name) = @_;
  my $p = at($parent, $name);
  if (my $dir = open_dir($p)) {
    opendir(my $names, '/proc/self/fd/' . fileno($dir)) or die "cannot list $name: $!\n";
    for my $child (readdir $names) {
      remove_tree($dir, $child) unless $child eq '.' || $child eq '..';
    }
    rmdir $p or $! == ENOENT or die "cannot remove $name: $!\n";
    return;
  }
  unlink $p or $! == ENOENT or die "cannot remove $name: $!\n";
}

# Removes upload temporaries that no writer holds: a writer keeps its temporary file locked until
# it renames it, and a lock ends with its process, so one found unlocked was left by an upload
# whose computer was killed (or whose helper was) before it could clean up. Symlinks are not
# followed; the walk stays in the home.
sub sweep_uploads {
  my ($dir, $depth) = @_;
  opendir(my $names, '/proc/self/fd/' . fileno($dir)) or return 0;
  my $swept = 0;
  for my $name (readdir $names) {
    next if $name eq '.' || $name eq '..';
    my $p = at($dir, $name);
    if ($name =~ $UPLOAD_TEMP) {
      sysopen(my $temp, $p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK) or next;
      next unless S_ISREG((stat $temp)[2]) && flock($temp, LOCK_EX | LOCK_NB);
      unlink $p and $swept++;
      next;
    }
    next if $depth >= $MAX_SWEEP_DEPTH;
    my $child = open_dir($p) or next;
    $swept += sweep_uploads($child, $depth + 1);
  }
  return $swept;
}

if ($op eq 'list' || $op eq 'open') {
  my ($parent, $name) = walk($rel, 1, 0);
  my ($fh) = open_last($parent, $name);
  my @st = stat $fh;
  if (S_ISDIR($st[2])) { list_dir($fh) }
  elsif ($op eq 'list') { verdict('notdir') }
  elsif (!S_ISREG($st[2])) { verdict('notfile') }
  elsif ($st[7] > $args[0]) { verdict('toolarge') }
  else { stream_file($fh, $st[7]) }
} elsif ($op eq 'cwd') {
  my ($parent, $name, $real) = walk($rel, 1, 0);
  my ($fh) = open_last($parent, $name);
  verdict('notdir') unless S_ISDIR((stat $fh)[2]);
  print "ok\n", ($real eq '' ? $HOME : "$HOME/$real"), "\0";
} elsif ($op eq 'write') {
  my ($size, $mode) = @args;
  my ($parent, $name) = walk($rel, 1, 1);
  verdict('notfile') unless defined $name;
  my @st = lstat at($parent, $name);
  verdict('notfile') if @st && !S_ISREG($st[2]);
  my $temp = sprintf '.cubicle-upload-%08x%08x', int(rand(2**32)), int(rand(2**32));
  sysopen(my $out, at($parent, $temp), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600) or verdict('notdir');
  # held until the rename: what tells a sweep that this temporary file is still being written
  flock($out, LOCK_EX) or die "cannot lock the upload: $!\n";
  print "ok\n";
  STDOUT->flush;
  my $left = $size;
  while ($left > 0) {
    my $got = read(STDIN, my $buffer, $left < 65536 ? $left : 65536);
    if (!$got) { unlink at($parent, $temp); die "the body ended early\n" }
    print {$out} $buffer or write_failed($parent, $temp);
    $left -= $got;
  }
  # one more byte, sent only once the body was seen to end at exactly `$size`: a longer body must
  # not be committed cut short
  my $end = '';
  read(STDIN, $end, 1);
  if ($end ne "\n") { unlink at($parent, $temp); die "the body did not end where announced\n" }
  # the umask must not decide the mode
  chmod oct($mode), $out;
  close $out or write_failed($parent, $temp);
  # rename never follows the name it replaces: a symlink put there meanwhile is replaced itself
  rename at($parent, $temp), at($parent, $name) or do {
    my $why = $!;
    unlink at($parent, $temp);
    verdict('notfile') if $why == EISDIR;
    die "rename failed: $why\n";
  };
  print "done\n";
} elsif ($op eq 'sweep') {
  my $home = open_dir($HOME) or die "cannot open the home: $!\n";
  print "ok\n", sweep_uploads($home, 0), "\0";
} elsif ($op eq 'delete') {
  my ($parent, $name) = walk($rel, 0, 0);
  verdict('outside') unless defined $name;
  lstat at($parent, $name) or verdict('missing');
  remove_tree($parent, $name);
  print "ok\n";
} elsif ($op eq 'untar') {
  # a new folder, made and entered here without following a symlink, then tar extracts into it
  # from stdin: `tar -C` would follow a symlink swapped in for the folder meanwhile
  my ($parent, $name) = walk($rel, 0, 0);
  verdict('outside') unless defined $name;
  mkdir at($parent, $name), 0700 or die "cannot make $rel: $!\n";
  my $dir = open_dir(at($parent, $name)) or die "cannot open $rel: $!\n";
  chdir $dir or die "cannot enter $rel: $!\n";
  exec 'tar', '-xpf', '-', '--no-same-owner' or die "cannot start tar: $!\n";
} else {
  die "unknown operation $op\n";
}
