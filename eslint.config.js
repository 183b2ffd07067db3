// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import reactHooks from 'eslint-plugin-react-hooks';

export default tseslint.config(
  { ignores: ['**/dist/', 'web/dist/', 'node_modules/', '.cache/', 'bench/results/', 'coverage/'] },
  // AssemblyScript (compiled to WebAssembly by `asc`, not by tsc): its builtins are not TypeScript's.
  { ignores: ['services/**/assembly/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'off',
    },
  },
  {
    // NOTE: config.ts is the only module allowed to read process.env (STYLE.md rule 5).
    files: ['services/**/*.ts'],
    ignores: ['services/shared/config.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        {
          object: 'process',
          property: 'env',
          message: 'Read configuration through services/shared/config.ts',
        },
      ],
    },
  },
  {
    // The dashboard: React hooks rules (rules-of-hooks, exhaustive-deps) on the browser code.
    files: ['web/src/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      'react-hooks/rules-of-hooks': 'error',
      'react-hooks/exhaustive-deps': 'error',
    },
  },
);
