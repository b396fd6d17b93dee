import '@picocss/pico/css/pico.min.css';
import './styles.css';
import './styles/layout.css';
import './styles/tables.css';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './app';

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
