import tseslint from 'typescript-eslint';
export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/__generated__/', 'examples/*/src/gql/', 'data/'] },
  ...tseslint.configs.recommendedTypeChecked,
  { languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: '/work/main' } } },
);
