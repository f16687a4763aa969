// Light or dark: the system's preference (prefers-color-scheme) unless the person chose
// one with the header's toggle; the choice is remembered in localStorage (nothing else is
// kept there, and nothing is written until someone toggles).
const KEY = 'bb-dashboard-theme';
const media = window.matchMedia ? window.matchMedia('(prefers-color-scheme: dark)') : null;

function chosen() {
  try { return localStorage.getItem(KEY); } catch { return null; }
}

export function currentTheme() {
  return chosen() || (media && media.matches ? 'dark' : 'light');
}

export function applyTheme() {
  document.documentElement.dataset.theme = currentTheme();
}

/** The header's button: switches and remembers the other theme. */
export function themeToggle() {
  const label = () => (currentTheme() === 'dark' ? 'light mode' : 'dark mode');
  const b = document.createElement('button');
  b.type = 'button';
  b.id = 'theme-toggle';
  b.className = 'link';
  b.textContent = label();
  b.addEventListener('click', () => {
    try { localStorage.setItem(KEY, currentTheme() === 'dark' ? 'light' : 'dark'); } catch { /* private mode */ }
    applyTheme();
    b.textContent = label();
    window.dispatchEvent(new Event('themechange'));
  });
  return b;
}

applyTheme();
if (media && media.addEventListener) media.addEventListener('change', applyTheme);
