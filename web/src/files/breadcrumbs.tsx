import styles from "./files.module.css";
import { crumbsOf } from "./paths.ts";

/** The folders from the home down to the one shown; each but the last opens that folder. */
export function Breadcrumbs({ path, onOpen }: { path: string; onOpen: (path: string) => void }) {
  const crumbs = crumbsOf(path);
  return (
    <nav aria-label="Breadcrumb">
      <ol className={styles.crumbs}>
        {crumbs.map((crumb, index) => (
          <li key={crumb.path}>
            {index === crumbs.length - 1 ? (
              <span aria-current="location">{crumb.name}</span>
            ) : (
              <button type="button" className="link" onClick={() => onOpen(crumb.path)}>
                {crumb.name}
              </button>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}
