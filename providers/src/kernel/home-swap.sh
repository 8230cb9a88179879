# home-swap <home> <stage> <old>: run inside the computer as its user (sh -c <this> home-swap ...).
# Swaps the staged contents in, by renames only: the current top-level entries move into
# `$old/home`, each staged one is renamed into its place, and `$old` is removed. A rename cannot be
# made to fail by a program writing inside the folder it moves, whereas removing a tree that is
# being written to can (`rm: Directory not empty`), and a rollback built on removal then mixes old
# and new. A program still running in the computer may also make a name again between the two
# moves (the window manager, a bot's command); that one is renamed aside into `$old/again-N` and
# the imported entry takes its place. If an entry cannot be moved in, whatever is in the home is
# renamed aside and the previous contents are renamed back. The browsers are closed before this
# runs (importHome), so none writes its profile during the swap or into the new home after it.
# Removing `$old` is retried; if a program keeps writing into it, it is left to the next import
# (exports skip it) rather than failing a swap that is done.
set -u
home=$1 stage=$2 old=$3
cd "$home" || exit 1
# a symlink swapped in for the staging folder would move whatever it leads to into the home
[ -d "$stage" ] && [ ! -L "$stage" ] || { echo "the staging folder was replaced" >&2; exit 1; }
again=0
present() { [ -e "$1" ] || [ -L "$1" ]; }
staging() { [ "$1" = "$stage" ] || [ "$1" = "$old" ]; }
# put_aside <name>: renames the home's entry <name> into a new folder under $old
put_aside() {
  again=$((again + 1))
  mkdir -- "$old/again-$again" && mv -- "./$1" "$old/again-$again/"
}
# place <source> <name>: renames <source> to ./<name>, putting aside a <name> made again meanwhile
place() {
  tries=0
  until mv -T -- "$1" "./$2" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -le 10 ] || { mv -T -- "$1" "./$2"; return; }
    put_aside "$2" 2>/dev/null || :
  done
}
remove() {
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    rm -rf -- "$1" 2>/dev/null && return 0
    sleep 0.2
  done
  rm -rf -- "$1"
}
# put_back: once entries were moved in, whatever is in the home goes aside; the previous contents
# come back (a name made again meanwhile is put aside); $old is kept if any of them could not be
put_back() {
  if [ "$moving" = in ]; then
    for entry in ./* ./.[!.]* ./..?*; do
      name=${entry#./}
      staging "$name" || ! present "$entry" || put_aside "$name"
    done
  fi
  for entry in "$old"/home/* "$old"/home/.[!.]* "$old"/home/..?*; do
    present "$entry" && place "$entry" "${entry##*/}"
  done
  [ -n "$(ls -A -- "$old/home")" ] || remove "$old"
  exit 1
}
mkdir -- "$old" "$old/home" || exit 1
moving=aside
for entry in ./* ./.[!.]* ./..?*; do
  name=${entry#./}
  staging "$name" || ! present "$entry" && continue
  # an entry removed meanwhile is fine; one that stays put is not
  mv -- "$entry" "$old/home/" || ! present "$entry" || put_back
done
moving=in
for entry in "$stage"/* "$stage"/.[!.]* "$stage"/..?*; do
  present "$entry" || continue
  place "$entry" "${entry##*/}" || put_back
done
rmdir -- "$stage" 2>/dev/null || remove "$stage" || :
remove "$old" || echo "left $old behind: something still writes into it" >&2
