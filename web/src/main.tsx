import './lib/locale-guard';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';
import { applyThemePref } from './lib/theme';
import './styles.css';

// The stored theme applies before the first render: no flash of the other theme.
applyThemePref();

const root = document.getElementById('root');
if (root)
  createRoot(root).render(
    <StrictMode>
      <App />
    </StrictMode>,
  );
